//go:build unix

package handover

import (
	"fmt"
	"syscall"
)

func execve(path string, args, env []string) error {
	if err := syscall.Exec(path, args, env); err != nil {
		return fmt.Errorf("handover: exec %s: %w", path, err)
	}
	return nil
}

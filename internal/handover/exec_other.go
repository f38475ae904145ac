//go:build !unix

package handover

import (
	"errors"
	"fmt"
)

func execve(path string, _, _ []string) error {
	return fmt.Errorf("handover: exec %s: %w", path, errors.ErrUnsupported)
}

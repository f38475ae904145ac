//go:build unix && !linux

package childproc

import "syscall"

// procAttr puts the server in a group of its own when asked.
func procAttr(ownGroup bool) *syscall.SysProcAttr {
	if !ownGroup {
		return nil
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

package testenv

import "syscall"

// procAttr makes the kernel stop a server whose test binary died without
// running its cleanups, so no server outlives its test.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

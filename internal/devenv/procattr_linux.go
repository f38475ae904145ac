package devenv

import "syscall"

// procAttr puts a server in its own process group, so that a Ctrl-C meant
// for `poller local` does not reach it before poller stops it in order, and
// has the kernel stop it if poller dies without cleaning up.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

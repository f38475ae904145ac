package childproc

import "syscall"

// procAttr puts the server in a group of its own when asked, and has the
// kernel send it SIGTERM when this process dies without stopping it, so that
// no server outlives its test or poller local.
func procAttr(ownGroup bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGTERM}
}

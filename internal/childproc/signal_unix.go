//go:build unix

package childproc

import "syscall"

// terminate and kill signal the server's process group when it has one of
// its own, which reaches what the server started too; else the server.
func (p *Proc) terminate() { p.signal(syscall.SIGTERM) }
func (p *Proc) kill()      { p.signal(syscall.SIGKILL) }

func (p *Proc) signal(sig syscall.Signal) {
	if p.group && syscall.Kill(-p.cmd.Process.Pid, sig) == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
}

//go:build !unix

package childproc

import "syscall"

// Without process groups or SIGTERM, Stop kills the server itself.
func procAttr(bool) *syscall.SysProcAttr { return nil }
func (p *Proc) terminate()               { _ = p.cmd.Process.Kill() }
func (p *Proc) kill()                    { _ = p.cmd.Process.Kill() }

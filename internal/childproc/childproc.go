package childproc

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ReadyTimeout bounds how long a server may take to answer WaitHTTP;
// moto_server needs a few seconds on a cold, loaded machine.
const ReadyTimeout = 60 * time.Second

// stopGrace is how long Stop waits after SIGTERM before it kills.
var stopGrace = 10 * time.Second

// Spec says which server to start and how.
type Spec struct {
	// Name names the server in errors [the base name of Path].
	Name string
	Path string
	Args []string
	// Env is the server's whole environment; nil gives it this process's.
	Env []string
	// OwnGroup starts the server in a process group of its own, which Stop
	// signals whole (the server and whatever it started). A terminal's
	// Ctrl-C then reaches only this process, which stops the server itself
	// (poller local stops its servers in order). Without it the server
	// shares this process's group and gets the Ctrl-C too: where the kernel
	// does not stop the children of a dead parent (anywhere but Linux), that
	// is what stops a test's servers when go test is interrupted.
	OwnGroup bool
	// Keep bounds the output kept for errors, in bytes [64 KiB].
	Keep int
}

// Proc is a started server.
type Proc struct {
	name    string
	cmd     *exec.Cmd
	group   bool
	out     *Buffer
	exited  chan struct{}
	started time.Time
}

// Start starts the server. On Linux the kernel sends it SIGTERM if this
// process dies without stopping it.
func Start(s Spec) (*Proc, error) {
	name := s.Name
	if name == "" {
		name = filepath.Base(s.Path)
	}
	cmd := exec.Command(s.Path, s.Args...)
	cmd.Env = s.Env
	out := &Buffer{Limit: s.Keep}
	if out.Limit == 0 {
		out.Limit = 64 << 10
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = procAttr(s.OwnGroup)
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{name: name, cmd: cmd, group: s.OwnGroup, out: out, exited: make(chan struct{}), started: started}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// PID is the server's process ID.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Started is when Start was called.
func (p *Proc) Started() time.Time { return p.started }

// Output is what the server wrote so far (up to Spec.Keep bytes).
func (p *Proc) Output() string { return p.out.String() }

// Exited is closed once the server has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// WaitHTTP polls url until ready accepts the status code, the server
// exits, or ReadyTimeout passes. Its errors carry the server's output.
func (p *Proc) WaitHTTP(url string, ready func(status int) bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(ReadyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before answering; output:\n%s", p.name, p.out.String())
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if ready(resp.StatusCode) {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("%s gave no ready answer at %s within %s; output:\n%s", p.name, url, ReadyTimeout, p.out.String())
}

// Stop sends SIGTERM by PID (to the process group with Spec.OwnGroup),
// then SIGKILL if the server lingers, and returns once it is reaped.
func (p *Proc) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.terminate()
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		p.kill()
		<-p.exited
	}
}

// FreePort returns want when it is free on 127.0.0.1, else (or when want
// is 0) a port that was free a moment ago.
func FreePort(want int) (int, error) {
	if want > 0 {
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(want)); err == nil {
			l.Close()
			return want, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Buffer collects a child process's output (or a logger's) while another
// goroutine reads it: os/exec writes from its copying goroutine.
type Buffer struct {
	// Limit caps what is kept, in bytes: the first Limit bytes (a write
	// that begins below it is kept whole); 0 keeps everything.
	Limit int
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit == 0 || b.buf.Len() < b.Limit {
		b.buf.Write(p)
	}
	return len(p), nil
}

// String returns what was kept so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

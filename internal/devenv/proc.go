package devenv

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds how long a server may take to answer; moto_server
// needs a few seconds on a cold, loaded machine.
const readyTimeout = 60 * time.Second

// FindTool returns the path of an external program: <root>/.bin/<name>
// (where `make tools` and `make py-tools` put them) first, then $PATH.
func FindTool(root, name string) (string, error) {
	local := filepath.Join(root, ".bin", name)
	if fi, err := os.Stat(local); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return local, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found in %s or $PATH: run `make local` (it installs the tools), or `make tools py-tools`", name, filepath.Dir(local))
}

// proc is one started server.
type proc struct {
	name    string
	cmd     *exec.Cmd
	out     *tailBuffer
	exited  chan struct{}
	started time.Time
}

func startProc(name, path string, env []string, args ...string) (*proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = procAttr()
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, out: out, exited: make(chan struct{}), started: started}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// waitHTTP polls url until ready accepts the status code.
func (p *proc) waitHTTP(url string, ready func(int) bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before answering:\n%s", p.name, p.out.String())
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
	return fmt.Errorf("%s gave no ready answer at %s within %s:\n%s", p.name, url, readyTimeout, p.out.String())
}

// stop sends SIGTERM by PID, then SIGKILL if the server lingers.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// pickPort returns want when it is free on 127.0.0.1, else a free port.
func pickPort(want int) (int, error) {
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

// tailBuffer keeps the first max bytes a server writes, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < b.max {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

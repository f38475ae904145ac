package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer its first request;
// moto needs well over a second on a cold, loaded machine.
const startTimeout = 60 * time.Second

// RepoRoot returns the directory holding go.mod, walking up from the working
// directory (go test runs each package in its own directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testenv: working directory: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testenv: no go.mod above the working directory")
		}
		dir = parent
	}
}

// InCI reports whether the tests run in CI, where a missing tool is a failure
// rather than a reason to skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// CheckOnly reports make check's mode (SINK_CHECK=1): only the tests that
// need nothing installed run, and a test that needs a tool `make` installs
// (versitygw, MinIO, moto_server, aws-lambda-rie, the Python venvs, the
// SAM CLI, Docker) skips, even when the tool is there.
func CheckOnly() bool { return os.Getenv("SINK_CHECK") == "1" && !InCI() }

// SkipInCheck skips t under make check; needs names what t needs.
func SkipInCheck(t testing.TB, needs string) {
	t.Helper()
	if CheckOnly() {
		t.Skipf("make check leaves out what needs %s (make test runs it)", needs)
	}
}

// installed are the tools `make` installs into .bin/ (the others, such as
// bash and python3, come with the machine).
var installed = map[string]bool{"versitygw": true, "minio": true, "moto_server": true, "aws-lambda-rie": true, "cfn-lint": true, "sam": true, "aws": true}

// RequireTool returns the path of an external tool: <repo>/.bin/<name> first,
// then $PATH. A missing tool skips the test locally and fails it in CI.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	if installed[name] || strings.Contains(name, "/") {
		SkipInCheck(t, name)
	}
	local := filepath.Join(RepoRoot(t), ".bin", name)
	if fi, err := os.Stat(local); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return local
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("testenv: tool %q not found in %s or $PATH", name, filepath.Dir(local))
	if InCI() {
		t.Fatal(msg + " (CI=true: tools must be installed)")
	}
	t.Skip(msg)
	return ""
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is one started child process.
type server struct {
	cmd    *exec.Cmd
	output *LockedBuffer
	exited chan struct{}
}

// LockedBuffer collects a child process's output (or a logger's) while the
// test reads it: os/exec writes from its copying goroutine.
type LockedBuffer struct {
	// Limit caps what is kept, in bytes; 0 keeps everything.
	Limit int
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit == 0 || b.buf.Len() < b.Limit {
		b.buf.Write(p)
	}
	return len(p), nil
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs the command and registers its shutdown (SIGTERM by PID, then
// SIGKILL if it lingers) with t.Cleanup.
func start(t testing.TB, path string, args ...string) *server {
	t.Helper()
	return startEnv(t, nil, path, args...)
}

// startEnv is start with the child's environment (nil: this process's).
func startEnv(t testing.TB, env []string, path string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = env
	out := &LockedBuffer{Limit: 64 << 10}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: start %s: %v", filepath.Base(path), err)
	}
	s := &server{cmd: cmd, output: out, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// waitHTTP polls url until ready accepts the status, the process exits, or
// the timeout passes.
func (s *server) waitHTTP(url string, ready func(status int) bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return errors.New("process exited before answering")
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if ready(resp.StatusCode) {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("no ready answer from %s within %s", url, startTimeout)
}

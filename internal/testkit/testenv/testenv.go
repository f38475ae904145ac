package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/childproc"
)

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
	port, err := childproc.FreePort(0)
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	return port
}

// LockedBuffer collects a child process's output (or a logger's) while the
// test reads it; its Limit caps what is kept, in bytes (0 keeps everything).
type LockedBuffer = childproc.Buffer

// start runs the command and registers its shutdown (SIGTERM by PID, then
// SIGKILL if it lingers) with t.Cleanup.
func start(t testing.TB, path string, args ...string) *childproc.Proc {
	t.Helper()
	return startEnv(t, nil, path, args...)
}

// startEnv is start with the child's environment (nil: this process's).
// The child shares the test's process group, so an interrupted go test
// interrupts it too; on Linux the kernel also stops it when the test binary
// dies without running its cleanups.
func startEnv(t testing.TB, env []string, path string, args ...string) *childproc.Proc {
	t.Helper()
	p, err := childproc.Start(childproc.Spec{Path: path, Args: args, Env: env, Keep: 64 << 10})
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(p.Stop)
	return p
}

// PyIggy returns the python of the venv `make py-iggy` installs the released
// Python Iggy client (apache-iggy 0.9.0) into, .bin/pyiggy-<pins>/. Without
// it the test skips, except in CI, where it fails.
func PyIggy(t testing.TB) string {
	t.Helper()
	SkipInCheck(t, "the apache-iggy venv")
	root := RepoRoot(t)
	venvs, _ := filepath.Glob(filepath.Join(root, ".bin", "pyiggy-*", ".complete"))
	for _, done := range venvs {
		py := filepath.Join(filepath.Dir(done), "bin", "python")
		if _, err := os.Stat(py); err == nil {
			return py
		}
	}
	msg := fmt.Sprintf("the apache-iggy 0.9.0 venv is not installed under %s/.bin (run `make py-iggy`)", root)
	if InCI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// PyJSON runs cmd, a script of the released Python Iggy client that prints
// one JSON document, and decodes its standard output into v. The client
// sometimes aborts at interpreter exit after it printed everything (seen on
// a loaded machine): a run that ended so with its whole document printed is
// logged, not failed.
func PyJSON(t testing.TB, cmd *exec.Cmd, v any) {
	t.Helper()
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	out, err := cmd.Output()
	jerr := json.Unmarshal(out, v)
	if err != nil && jerr == nil && strings.Contains(err.Error(), "signal: aborted") {
		t.Logf("python %s: %v after its whole output", filepath.Base(cmd.Args[1]), err)
		err = nil
	}
	if err != nil || jerr != nil {
		t.Fatalf("python %s: %v %v\n%s", filepath.Base(cmd.Args[1]), err, jerr, out)
	}
}

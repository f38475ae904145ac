package devenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/childproc"
)

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

// startProc starts a server in a process group of its own, so that a
// Ctrl-C meant for `poller local` does not reach it before poller stops it
// in order; env is added to this process's environment.
func startProc(name, path string, env []string, args ...string) (*childproc.Proc, error) {
	var full []string
	if env != nil {
		full = append(os.Environ(), env...)
	}
	return childproc.Start(childproc.Spec{Name: name, Path: path, Args: args, Env: full, OwnGroup: true, Keep: 16 << 10})
}

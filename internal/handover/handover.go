// Package handover lets a build of the sink without Iceberg (the Lambda's
// lean bootstrap) pass a run whose configuration needs it to the full build.
//
// The two builds are one program: the lean one (go build -tags noiceberg)
// links no Iceberg library, so it starts in a tenth of the time and memory,
// and replaces itself with the full build beside it, named as it is plus a
// suffix (bootstrap-iceberg), when tables are configured.
package handover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoFullBuild is returned by Beside when no full build sits beside the
// running executable.
var ErrNoFullBuild = errors.New("no full build beside this executable")

// Beside returns the path of the full build beside the running executable:
// its own name plus suffix, in its directory, when that is an executable
// regular file.
func Beside(suffix string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("handover: this executable's path: %w", err)
	}
	return besidePath(self, suffix)
}

func besidePath(self, suffix string) (string, error) {
	full := filepath.Join(filepath.Dir(self), filepath.Base(self)+suffix)
	if os.Getenv(handedOver) != "" {
		// The full build never hands over; a lean build started by a
		// handover is a link to itself: refuse rather than loop.
		return "", fmt.Errorf("handover: %s is a lean build too (%s is set): %w", filepath.Base(self), handedOver, ErrNoFullBuild)
	}
	fi, err := os.Stat(full)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("handover: %s: %w", full, ErrNoFullBuild)
		}
		return "", fmt.Errorf("handover: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("handover: %s is not an executable file: %w", full, ErrNoFullBuild)
	}
	if me, err := os.Stat(self); err == nil && os.SameFile(me, fi) {
		return "", fmt.Errorf("handover: %s is this executable itself: %w", full, ErrNoFullBuild)
	}
	return full, nil
}

// handedOver is set in the environment of the program handed over to.
const handedOver = "SINK_HANDED_OVER"

// Exec replaces the process with the program at path, given this process's
// arguments and environment. It returns only when that fails; then the
// process is unchanged.
func Exec(path string) error {
	return execve(path, os.Args, append(os.Environ(), handedOver+"=1"))
}

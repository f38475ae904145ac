package handover

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestBesidePath(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "bootstrap")
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("bootstrap-iceberg", 0o755)
	write("bootstrap-plain", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "bootstrap-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("bootstrap", 0o755)
	if err := os.Link(self, filepath.Join(dir, "bootstrap-self")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		suffix string
		want   string
		err    error
	}{
		{"-iceberg", filepath.Join(dir, "bootstrap-iceberg"), nil},
		{"-missing", "", ErrNoFullBuild},
		{"-plain", "", ErrNoFullBuild}, // not executable
		{"-dir", "", ErrNoFullBuild},
		{"-self", "", ErrNoFullBuild}, // a link to itself would loop
	} {
		got, err := besidePath(self, tc.suffix)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("besidePath(%q): %q, %v; want %q, %v", tc.suffix, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "bootstrap"+tc.suffix) {
			t.Errorf("besidePath(%q): the error does not name the file: %v", tc.suffix, err)
		}
	}
}

// TestExecKeepsProcessArgsAndEnvironment: the handed-over program is the
// same process (Lambda's runtime knows it by its PID), with the arguments
// and environment it was started with.
func TestExecKeepsProcessArgsAndEnvironment(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no exec on windows")
	}
	switch os.Getenv("HANDOVER_STAGE") {
	case "1":
		fmt.Printf("before pid=%d\n", os.Getpid())
		os.Setenv("HANDOVER_STAGE", "2")
		self, _ := os.Executable()
		err := Exec(self)
		fmt.Printf("exec returned: %v\n", err)
		os.Exit(3)
	case "2":
		fmt.Printf("after pid=%d args=%q marker=%s\n", os.Getpid(), os.Args[1:], os.Getenv("HANDOVER_MARKER"))
		// A handed-over program never hands over again.
		if _, err := besidePath(filepath.Join(t.TempDir(), "x"), ""); !errors.Is(err, ErrNoFullBuild) {
			fmt.Printf("hands over again: %v\n", err)
			os.Exit(4)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecKeepsProcessArgsAndEnvironment$", "-test.v=false")
	cmd.Env = append(os.Environ(), "HANDOVER_STAGE=1", "HANDOVER_MARKER=kept")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var before, after int
	for _, l := range strings.Split(string(out), "\n") {
		fmt.Sscanf(l, "before pid=%d", &before)
		fmt.Sscanf(l, "after pid=%d", &after)
	}
	if before == 0 || after != before {
		t.Fatalf("pid before %d, after %d (want the same process):\n%s", before, after, out)
	}
	if !strings.Contains(string(out), ` args=["-test.run=^TestExecKeepsProcessArgsAndEnvironment$" "-test.v=false"] marker=kept`) {
		t.Fatalf("arguments or environment not kept:\n%s", out)
	}
}

func TestExecFailureLeavesProcess(t *testing.T) {
	err := Exec(filepath.Join(t.TempDir(), "nothing-here"))
	if err == nil || !strings.Contains(err.Error(), "nothing-here") {
		t.Fatalf("Exec of a missing file: %v", err)
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoCollectionDuringInit: the Iceberg library's initialisers allocate
// about 40 MB; internal/initgc must be initialised before them and hold the
// collector back until main, so that starting the poller (and the Lambda,
// on every cold start) marks none of it. The runtime's own traces say
// which package initialised when, and every collection.
func TestNoCollectionDuringInit(t *testing.T) {
	for _, cmd := range []struct{ dir, arg string }{
		{".", "version"},
		// Outside Lambda the bootstrap stops at once (no runtime API), after its initialisers.
		{"../lambda", ""},
	} {
		t.Run(filepath.Base(cmd.dir), func(t *testing.T) { checkInitHeld(t, cmd.dir, cmd.arg) })
	}
}

func checkInitHeld(t *testing.T, dir, arg string) {
	bin := filepath.Join(t.TempDir(), "cmd")
	if b, err := exec.Command("go", "build", "-o", bin, dir).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, b)
	}
	cmd := exec.Command(bin, arg)
	cmd.Env = append(withoutGCSettings(os.Environ()), "GODEBUG=inittrace=1,gctrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil && dir == "." {
		t.Fatalf("poller %s: %v\n%s", arg, err, out)
	}
	lines := strings.Split(string(out), "\n")
	held, catalogue, lastInit := -1, -1, -1
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "init github.com/iggy-s3-sink/iggy-s3-sink/internal/initgc "):
			held = i
		case strings.HasPrefix(line, "init github.com/apache/iceberg-go/table/substrait "):
			catalogue = i
		}
		if strings.HasPrefix(line, "init ") {
			lastInit = i
		}
	}
	switch {
	case held < 0 || catalogue < 0:
		t.Fatalf("no init trace of internal/initgc (line %d) or of iceberg-go's table/substrait (line %d):\n%s", held, catalogue, out)
	case held > catalogue:
		t.Fatalf("internal/initgc is initialised after iceberg-go's table/substrait (trace lines %d, %d)", held, catalogue)
	}
	// One before initgc's turn marks a heap of a few MB; those after the
	// last initialiser are main's. A collection's line is printed when it
	// ends, so one begun before initgc's turn (it says when it began) may
	// come after initgc's line on a busy machine.
	heldAt, ok := traceTime(lines[held], "@", " ms")
	if !ok {
		t.Fatalf("no start time in internal/initgc's init trace %q", lines[held])
	}
	for _, line := range lines[held:lastInit] {
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		began, ok := traceTime(line, "@", "s ")
		if !ok {
			t.Fatalf("no start time in the collection's trace %q", line)
		}
		if began*1000 >= heldAt {
			t.Errorf("a collection during package initialisation, after internal/initgc (@%.3f ms): %s", heldAt, line)
		}
	}
}

// traceTime reads the number between the first from and the next to in a
// runtime trace line.
func traceTime(line, from, to string) (float64, bool) {
	_, rest, ok := strings.Cut(line, from)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, to)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(num, 64)
	return v, err == nil
}

func withoutGCSettings(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") && !strings.HasPrefix(kv, "GODEBUG=") {
			out = append(out, kv)
		}
	}
	return out
}

package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recordingTB captures Skip and Fatal instead of ending the real test.
type recordingTB struct {
	testing.TB
	skipped, fatal string
}

func (r *recordingTB) Helper()           {}
func (r *recordingTB) Skip(args ...any)  { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recordingTB) Fatal(args ...any) { r.fatal = fmt.Sprint(args...); runtime.Goexit() }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func requireTool(tb testing.TB, name string) (path string, rec *recordingTB) {
	rec = &recordingTB{TB: tb}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = RequireTool(rec, name)
	}()
	<-done
	return path, rec
}

func TestRequireTool(t *testing.T) {
	const missing = "no-such-tool-for-testenv"
	tests := []struct {
		name, tool, ci string
		wantPath       bool
		wantSkip       bool
		wantFatal      bool
	}{
		{"found on PATH", "sh", "", true, false, false},
		{"missing locally skips", missing, "", false, true, false},
		{"missing in CI fails", missing, "true", false, false, true},
		{"found in CI", "sh", "true", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			path, rec := requireTool(t, tt.tool)
			if (path != "") != tt.wantPath || (rec.skipped != "") != tt.wantSkip || (rec.fatal != "") != tt.wantFatal {
				t.Fatalf("path=%q skipped=%q fatal=%q", path, rec.skipped, rec.fatal)
			}
			if msg := rec.skipped + rec.fatal; msg != "" && !strings.Contains(msg, tt.tool) {
				t.Fatalf("message %q does not name the tool", msg)
			}
		})
	}
}

func TestRequireToolPrefersRepoBin(t *testing.T) {
	// versitygw is built into <repo>/.bin by the Makefile; when present it
	// must win over anything on PATH.
	local := filepath.Join(RepoRoot(t), ".bin", "versitygw")
	if _, err := os.Stat(local); err != nil {
		t.Skip("no .bin/versitygw in this checkout")
	}
	if got := RequireTool(t, "versitygw"); got != local {
		t.Fatalf("RequireTool = %q, want %q", got, local)
	}
}

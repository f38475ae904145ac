package app

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "f9a8852024dc3c49d76acb6a7c2e863d4cda826b"}, {Key: "vcs.time", Value: "2026-11-30T20:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionOf(stamped), "iggy-s3-sink v0.3.0 (commit f9a8852024dc+modified, 2026-11-30T20:00:00Z), go1.26.8"; got != want {
		t.Errorf("stamped build: %q, want %q", got, want)
	}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	if got, want := versionOf(bare), "iggy-s3-sink (devel), go1.26.8"; got != want {
		t.Errorf("unstamped build: %q, want %q", got, want)
	}
	buildCommit = "0123456789ab"
	defer func() { buildCommit = "" }()
	if got, want := versionOf(bare), "iggy-s3-sink (devel) (commit 0123456789ab), go1.26.8"; got != want {
		t.Errorf("commit from -ldflags: %q, want %q", got, want)
	}
}

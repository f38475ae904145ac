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

func TestStatusLag(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name               string
		current, committed *uint64
		want               uint64
	}{
		{"empty partition", nil, nil, 0},
		{"nothing committed", u(249), nil, 250},
		{"behind", u(249), u(199), 50},
		{"caught up", u(249), u(249), 0},
	} {
		if got := statusLag(PartitionStatus{Current: tc.current, Committed: tc.committed}); got != tc.want {
			t.Errorf("%s: lag %d, want %d", tc.name, got, tc.want)
		}
	}
}

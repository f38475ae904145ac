package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// The skip messages below are the ones this repository's tests and
// internal/testkit/testenv give, as `go test -json` records them.
func TestGroupOf(t *testing.T) {
	tests := []struct {
		reason string
		want   string // the label for one test, then for three
	}{
		{"make check leaves out what needs versitygw (make test runs it)", "1 needs versitygw|3 need versitygw"},
		{"make check leaves out what needs make local's servers (make test runs it)", "1 needs make local's servers|3 need make local's servers"},
		{`testenv: tool "moto_server" not found in /work/main/.bin or $PATH`, "1 needs moto_server|3 need moto_server"},
		{`testenv: tool "moto_server" not found in /tmp/other/.bin or $PATH`, "1 needs moto_server|3 need moto_server"},
		{"testenv: pyiceberg (/work/main/.bin/pyiceberg/bin/python; scripts/iceberg-tools.sh installs it) is missing", "1 needs pyiceberg|3 need pyiceberg"},
		{"needs the in-repo broker's fault hooks; IGGY_TEST_ADDRESS points at a real server", "1 needs the in-repo broker|3 need the in-repo broker"},
		{"needs the in-repo broker's reply delay; IGGY_TEST_ADDRESS points at a real server", "1 needs the in-repo broker|3 need the in-repo broker"},
		{"set IGGY_TEST_TOKEN to a personal access token of the real server", "1 needs IGGY_TEST_TOKEN|3 need IGGY_TEST_TOKEN"},
		{"no .bin/moto_server: run make py-tools first (make local would install it inside the test's copy)", "1 needs moto_server|3 need moto_server"},
		{"the apache-iggy 0.9.0 venv is not installed under /work/main/.bin (run `make py-iggy`)", "1 needs the apache-iggy 0.9.0 venv|3 need the apache-iggy 0.9.0 venv"},
		{"moto_server not on PATH: exec: \"moto_server\": executable file not found in $PATH", "1 needs moto_server|3 need moto_server"},
		{"cpulimit: no cgroup v2 at /sys/fs/cgroup: CPU quotas cannot be used on this machine (the sizing script says so too)", "1 needs CPU quotas|3 need CPU quotas"},
		{"the race detector makes sync.Pool drop items on purpose", `1 × "the race detector makes sync.Pool drop…"|3 × "the race detector makes sync.Pool drop…"`},
		{"not a git checkout: exit status 128", `1 × "not a git checkout"|3 × "not a git checkout"`},
		{"no reason given", `1 × "no reason given"|3 × "no reason given"`},
		{"", `1 × "no reason given"|3 × "no reason given"`},
	}
	for _, tt := range tests {
		g := groupOf(tt.reason)
		if got := g.label(1) + "|" + g.label(3); got != tt.want {
			t.Errorf("groupOf(%q) labels %q, want %q", tt.reason, got, tt.want)
		}
	}
}

// skipEvents records a skipped test as `go test -json` does: its RUN line,
// the t.Skip message with its file:line, the SKIP line and the event.
func skipEvents(pkg, test, reason string) string {
	out := func(s string) string {
		return fmt.Sprintf(`{"Action":"output","Package":%q,"Test":%q,"Output":%q}`+"\n", pkg, test, s)
	}
	return fmt.Sprintf(`{"Action":"run","Package":%q,"Test":%q}`+"\n", pkg, test) +
		out("=== RUN   "+test+"\n") + out("    x_test.go:12: "+reason+"\n") + out("--- SKIP: "+test+" (0.00s)\n") +
		fmt.Sprintf(`{"Action":"skip","Package":%q,"Test":%q}`+"\n", pkg, test)
}

func passEvents(pkg, test string) string {
	return fmt.Sprintf(`{"Action":"run","Package":%q,"Test":%q}`+"\n", pkg, test) +
		fmt.Sprintf(`{"Action":"pass","Package":%q,"Test":%q}`+"\n", pkg, test)
}

// A make check run: skips of three kinds in several packages, each
// message naming its own paths.
func checkRun() string {
	const m = "example.com/m"
	return passEvents(m+"/internal/a", "TestOne") + passEvents(m+"/internal/b", "TestTwo") +
		skipEvents(m+"/internal/drain", "TestVersity", "make check leaves out what needs versitygw (make test runs it)") +
		skipEvents(m+"/internal/s3store", "TestPut", "make check leaves out what needs versitygw (make test runs it)") +
		skipEvents(m+"/cmd/poller", "TestKill/versitygw", "make check leaves out what needs versitygw (make test runs it)") +
		skipEvents(m+"/internal/drain", "TestHooks", "needs the in-repo broker's fault hooks; IGGY_TEST_ADDRESS points at a real server") +
		skipEvents(m+"/internal/fanout", "TestDelay", "needs the in-repo broker's reply delay; IGGY_TEST_ADDRESS points at a real server") +
		skipEvents(m+"/internal/state", "TestSuite/Rounding", "the stand-in rounds numbers to whole seconds, unlike DynamoDB")
}

func TestSummaryLineGroupsSkips(t *testing.T) {
	s := &summary{out: &bytes.Buffer{}, pending: map[key][]string{}}
	if err := s.read(strings.NewReader(checkRun())); err != nil {
		t.Fatal(err)
	}
	want := `tests: 2 passed, 0 failed, 6 skipped: 3 need versitygw, 2 need the in-repo broker, 1 × "the stand-in rounds numbers to whole…" (V=1 names them)`
	if got := s.line(false); got != want {
		t.Errorf("summary line\n got %s\nwant %s", got, want)
	}
	if got := s.line(true); strings.Contains(got, "V=1") || !strings.HasPrefix(got, "tests: 2 passed, 0 failed, 6 skipped: 3 need versitygw,") {
		t.Errorf("summary line with -v: %s", got)
	}
}

func TestVerboseNamesSkippedTests(t *testing.T) {
	s := &summary{out: &bytes.Buffer{}, pending: map[key][]string{}}
	if err := s.read(strings.NewReader(checkRun())); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.writeSkips(&out)
	want := `skipped: 3 need versitygw
  make check leaves out what needs versitygw (make test runs it)
    cmd/poller.TestKill/versitygw
    internal/drain.TestVersity
    internal/s3store.TestPut
skipped: 2 need the in-repo broker
  needs the in-repo broker's fault hooks; IGGY_TEST_ADDRESS points at a real server
    internal/drain.TestHooks
  needs the in-repo broker's reply delay; IGGY_TEST_ADDRESS points at a real server
    internal/fanout.TestDelay
skipped: 1 × "the stand-in rounds numbers to whole…"
  the stand-in rounds numbers to whole seconds, unlike DynamoDB
    internal/state.TestSuite/Rounding
`
	if out.String() != want {
		t.Errorf("-v lists\n%s\nwant\n%s", out.String(), want)
	}
}

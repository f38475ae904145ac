package cpulimit

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

func TestLambdaShare(t *testing.T) {
	for mb, want := range map[int]string{128: "0.072", 256: "0.145", 1024: "0.579", 1769: "1.000", 3538: "2.000"} {
		if got := fmt.Sprintf("%.3f", LambdaShare(mb)); got != want {
			t.Errorf("LambdaShare(%d) = %s, want %s", mb, got, want)
		}
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		share float64
	}{{"ok", 0}, {"ok", -1}, {"ok", 65}, {"a/b", 0.5}, {"..", 0.5}, {"", 0.5}} {
		if _, err := New(tc.name, tc.share); err == nil || errors.Is(err, ErrUnsupported) {
			t.Errorf("New(%q, %v) = %v, want an error naming the bad input", tc.name, tc.share, err)
		}
	}
}

// TestQuotaThrottles runs a busy loop under a fifth of a CPU and checks the
// kernel throttled it. Where no cgroup can be made (not root, no cgroup
// CPU controller) there is nothing to check.
func TestQuotaThrottles(t *testing.T) {
	g, err := New(fmt.Sprintf("cpulimit-test-%d", os.Getpid()), 0.2)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("%v: CPU quotas cannot be used on this machine (the sizing script says so too)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cmd := g.Command("/bin/sh", "-c", "end=$(($(date +%s)+2)); while [ $(date +%s) -lt $end ]; do :; done")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	n, err := g.Throttled()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("a busy loop under %s was never throttled", g)
	}
	t.Logf("%s: throttled %d times in about 2s", g, n)
}

//go:build unix

package childproc

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sh(t *testing.T, script string, ownGroup bool) *Proc {
	t.Helper()
	p, err := Start(Spec{Path: "/bin/sh", Args: []string{"-c", script}, OwnGroup: ownGroup})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// waitOutput waits until the server wrote a full line, and returns it.
func waitOutput(t *testing.T, p *Proc) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if out := p.Output(); strings.Contains(out, "\n") {
			line, _ := bufio.NewReader(strings.NewReader(out)).ReadString('\n')
			return strings.TrimSpace(line)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no output line from %d", p.PID())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gone waits for pid to end: to be reaped, or (where /proc tells) to be a
// zombie, which an orphan stays until init gets round to it.
func gone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

func TestStopReachesTheGroup(t *testing.T) {
	for _, own := range []bool{true, false} {
		t.Run("own group "+strconv.FormatBool(own), func(t *testing.T) {
			// The shell waits on a child of its own and prints its PID.
			p := sh(t, "sleep 30 >/dev/null 2>&1 & echo $!; wait", own)
			child, err := strconv.Atoi(waitOutput(t, p))
			if err != nil {
				t.Fatal(err)
			}
			p.Stop()
			select {
			case <-p.Exited():
			default:
				t.Fatal("Stop returned before the server was reaped")
			}
			if !own {
				// The PID alone was signalled.
				if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
					t.Fatalf("the server's child %d: %v; want it left running", child, err)
				}
				return
			}
			if !gone(child) {
				syscall.Kill(child, syscall.SIGKILL)
				t.Fatalf("the server's child %d outlived Stop", child)
			}
		})
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 200 * time.Millisecond
	p := sh(t, "trap '' TERM; echo up; while :; do sleep 1; done", true)
	waitOutput(t, p)
	began := time.Now()
	p.Stop()
	if took := time.Since(began); took < stopGrace {
		t.Fatalf("stopped after %s, before the grace period", took)
	}
}

func TestWaitHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer srv.Close()
	p := sh(t, "exec sleep 30", false)
	if err := p.WaitHTTP(srv.URL, func(st int) bool { return st == http.StatusForbidden }); err != nil {
		t.Fatalf("WaitHTTP: %v", err)
	}
}

func TestWaitHTTPNamesAnExitAndItsOutput(t *testing.T) {
	p, err := Start(Spec{Name: "broken", Path: "/bin/sh", Args: []string{"-c", "echo cannot bind >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	err = p.WaitHTTP("http://127.0.0.1:1/", func(int) bool { return true })
	if err == nil || !strings.Contains(err.Error(), "broken exited before answering") || !strings.Contains(err.Error(), "cannot bind") {
		t.Fatalf("WaitHTTP: %v", err)
	}
}

func TestStartNamesAMissingProgram(t *testing.T) {
	_, err := Start(Spec{Path: "/no/such/server-4711"})
	if err == nil || !strings.Contains(err.Error(), "start server-4711") {
		t.Fatalf("Start: %v", err)
	}
}

func TestEnv(t *testing.T) {
	p, err := Start(Spec{Path: "/bin/sh", Args: []string{"-c", "echo \"[$CHILDPROC_PROBE]\""}, Env: []string{"CHILDPROC_PROBE=x"}})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if got := p.Output(); got != "[x]\n" {
		t.Fatalf("output %q", got)
	}
}

func TestFreePort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busy := ln.Addr().(*net.TCPAddr).Port
	got, err := FreePort(busy)
	if err != nil || got == busy || got == 0 {
		t.Fatalf("FreePort(busy %d) = %d, %v; want another free port", busy, got, err)
	}
	ln.Close()
	if got, err := FreePort(busy); err != nil || got != busy {
		t.Fatalf("FreePort(free %d) = %d, %v; want it", busy, got, err)
	}
	if got, err := FreePort(0); err != nil || got <= 0 || got > 65535 {
		t.Fatalf("FreePort(0) = %d, %v", got, err)
	}
}

func TestBufferKeepsTheFirstBytes(t *testing.T) {
	b := &Buffer{Limit: 4}
	for _, s := range []string{"ab", "cde", "f"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if b.String() != "abcde" {
		t.Fatalf("kept %q, want abcde", b.String())
	}
}

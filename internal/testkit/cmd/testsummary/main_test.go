package main

import (
	"bytes"
	"strings"
	"testing"
)

// A stream as `go test -json` writes it: a passing test, a skipped one with
// a reason, a failing one, a skipped subtest, and package lines.
const stream = `{"Action":"start","Package":"example.com/m/internal/a"}
{"Action":"run","Package":"example.com/m/internal/a","Test":"TestOK"}
{"Action":"output","Package":"example.com/m/internal/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"example.com/m/internal/a","Test":"TestOK"}
{"Action":"run","Package":"example.com/m/internal/a","Test":"TestTool"}
{"Action":"output","Package":"example.com/m/internal/a","Test":"TestTool","Output":"=== RUN   TestTool\n"}
{"Action":"output","Package":"example.com/m/internal/a","Test":"TestTool","Output":"    testenv.go:62: testenv: tool \"moto_server\" not found\n"}
{"Action":"output","Package":"example.com/m/internal/a","Test":"TestTool","Output":"--- SKIP: TestTool (0.00s)\n"}
{"Action":"skip","Package":"example.com/m/internal/a","Test":"TestTool"}
{"Action":"run","Package":"example.com/m/internal/a","Test":"TestBad"}
{"Action":"output","Package":"example.com/m/internal/a","Test":"TestBad","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"example.com/m/internal/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"example.com/m/internal/a","Test":"TestBad"}
{"Action":"output","Package":"example.com/m/internal/a","Test":"TestSuite/Big","Output":"    suite_test.go:51: the stand-in rounds numbers\n"}
{"Action":"skip","Package":"example.com/m/internal/a","Test":"TestSuite/Big"}
{"Action":"output","Package":"example.com/m/internal/a","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/m/internal/a","Output":"FAIL\texample.com/m/internal/a\t0.01s\n"}
{"Action":"fail","Package":"example.com/m/internal/a"}
`

func TestSummary(t *testing.T) {
	var out bytes.Buffer
	s := &summary{out: &out, pending: map[key][]string{}}
	if err := s.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"a_test.go:9: got 1, want 2", "--- FAIL: TestBad", "FAIL\texample.com/m/internal/a"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestOK") || strings.Contains(got, "moto_server") {
		t.Errorf("output shows passing or skipped tests' lines:\n%s", got)
	}
	line := s.line(false)
	want := `tests: 1 passed, 1 failed, 2 skipped: 1 needs moto_server, 1 × "the stand-in rounds numbers" (V=1 names them)`
	if line != want {
		t.Errorf("summary line\n got %s\nwant %s", line, want)
	}
	if !s.broken || s.failed != 1 {
		t.Errorf("broken=%v failed=%d, want a failure", s.broken, s.failed)
	}
}

func TestNoSkips(t *testing.T) {
	s := &summary{out: &bytes.Buffer{}, pending: map[key][]string{}, passed: 3}
	if got := s.line(false); got != "tests: 3 passed, 0 failed, none skipped" {
		t.Errorf("line = %q", got)
	}
}

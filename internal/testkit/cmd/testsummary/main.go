// Command testsummary reads `go test -json` on stdin, prints what plain
// `go test` would (a line per package, the output of failed tests and
// build errors), and ends with one line that lists the skipped tests and why.
// It exits 1 when a test or a build failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

type key struct{ pkg, test string }

// summary gathers what it needs as events stream by.
type summary struct {
	out     io.Writer
	pending map[key][]string // output of running tests
	skips   map[string][]string
	passed  int
	failed  int
	broken  bool // a package or a build failed
}

func main() {
	s := &summary{out: os.Stdout, pending: map[key][]string{}, skips: map[string][]string{}}
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	fmt.Fprintln(s.out, s.line())
	if s.broken || s.failed > 0 {
		os.Exit(1)
	}
}

func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event: go test itself printing (e.g. a setup failure).
			fmt.Fprintln(s.out, sc.Text())
			continue
		}
		s.handle(e)
	}
	return sc.Err()
}

func (s *summary) handle(e event) {
	k := key{e.Package, e.Test}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output)
	case e.Action == "build-fail":
		s.broken = true
	case e.Test == "":
		s.packageEvent(e)
	case e.Action == "output":
		s.pending[k] = append(s.pending[k], e.Output)
	case e.Action == "pass":
		s.passed++
		delete(s.pending, k)
	case e.Action == "fail":
		s.failed++
		for _, l := range s.pending[k] {
			fmt.Fprint(s.out, l)
		}
		delete(s.pending, k)
	case e.Action == "skip":
		why := skipReason(s.pending[k])
		s.skips[why] = append(s.skips[why], shortPkg(e.Package)+"."+e.Test)
		delete(s.pending, k)
	}
}

// packageEvent prints a package's own lines ("ok  pkg 1.2s", "FAIL pkg",
// panics) but not its bare "PASS".
func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "fail":
		s.broken = true
	case "output":
		if t := strings.TrimSpace(e.Output); t != "PASS" && t != "FAIL" && !strings.HasPrefix(t, "testing: warning: no tests to run") {
			fmt.Fprint(s.out, e.Output)
		}
	}
}

var fileLine = regexp.MustCompile(`^\s*[\w./-]+\.go:\d+: `)

// skipReason is the message the test gave t.Skip: its last log line before
// "--- SKIP", without the file:line prefix.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if loc := fileLine.FindStringIndex(lines[i]); loc != nil {
			return strings.TrimSpace(lines[i][loc[1]:])
		}
		return l
	}
	return "no reason given"
}

func shortPkg(p string) string {
	if i := strings.Index(p, "/internal/"); i >= 0 {
		return p[i+1:]
	}
	if i := strings.Index(p, "/cmd/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// line is the final summary: counts, then every skip grouped by reason.
func (s *summary) line() string {
	n := 0
	reasons := make([]string, 0, len(s.skips))
	for why, tests := range s.skips {
		n += len(tests)
		reasons = append(reasons, why)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if a, b := len(s.skips[reasons[i]]), len(s.skips[reasons[j]]); a != b {
			return a > b
		}
		return reasons[i] < reasons[j]
	})
	head := fmt.Sprintf("tests: %d passed, %d failed", s.passed, s.failed)
	if n == 0 {
		return head + ", none skipped"
	}
	head += fmt.Sprintf(", %d skipped", n)
	parts := make([]string, len(reasons))
	for i, why := range reasons {
		tests := s.skips[why]
		sort.Strings(tests)
		parts[i] = fmt.Sprintf("%d × %q (%s)", len(tests), why, strings.Join(tests, ", "))
	}
	return head + ": " + strings.Join(parts, "; ")
}

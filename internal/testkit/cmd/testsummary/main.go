// Command testsummary reads `go test -json` on stdin, prints what plain
// `go test` would (a line per package, the output of failed tests and
// build errors), and ends with one short line of counts: passed, failed and
// skipped, the skips grouped by what they lack ("8 need versitygw"). With -v
// (make check V=1) it first lists the skipped tests of each group with
// their reasons. It exits 1 when a test or a build failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
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
	skips   []skipped
	passed  int
	failed  int
	broken  bool // a package or a build failed
}

// skipped is a skipped test and the message it gave t.Skip.
type skipped struct{ test, reason string }

func main() {
	verbose := flag.Bool("v", false, "list the skipped tests of each group, with their reasons, before the last line")
	flag.Parse()
	s := &summary{out: os.Stdout, pending: map[key][]string{}}
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if *verbose {
		s.writeSkips(s.out)
	}
	fmt.Fprintln(s.out, s.line(*verbose))
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
		s.skips = append(s.skips, skipped{test: shortPkg(e.Package) + "." + e.Test, reason: skipReason(s.pending[k])})
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

// skipGroup is the skipped tests that lack the same thing.
type skipGroup struct {
	group
	tests []skipped
}

// groups returns the skips by group, the largest first.
func (s *summary) groups() []skipGroup {
	byGroup := map[group]*skipGroup{}
	var out []*skipGroup
	for _, sk := range s.skips {
		g := groupOf(sk.reason)
		sg := byGroup[g]
		if sg == nil {
			sg = &skipGroup{group: g}
			byGroup[g] = sg
			out = append(out, sg)
		}
		sg.tests = append(sg.tests, sk)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := len(out[i].tests), len(out[j].tests); a != b {
			return a > b
		}
		return out[i].label(1) < out[j].label(1)
	})
	res := make([]skipGroup, len(out))
	for i, sg := range out {
		sort.Slice(sg.tests, func(a, b int) bool { return sg.tests[a].test < sg.tests[b].test })
		res[i] = *sg
	}
	return res
}

// line is the final summary: the counts, and the skips by group.
func (s *summary) line(verbose bool) string {
	head := fmt.Sprintf("tests: %d passed, %d failed", s.passed, s.failed)
	if len(s.skips) == 0 {
		return head + ", none skipped"
	}
	groups := s.groups()
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = g.label(len(g.tests))
	}
	line := fmt.Sprintf("%s, %d skipped: %s", head, len(s.skips), strings.Join(parts, ", "))
	if !verbose {
		line += " (V=1 names them)"
	}
	return line
}

// writeSkips lists each group's tests under the reasons they gave.
func (s *summary) writeSkips(w io.Writer) {
	for _, g := range s.groups() {
		fmt.Fprintf(w, "skipped: %s\n", g.label(len(g.tests)))
		var reason string
		for _, sk := range sortedByReason(g.tests) {
			if sk.reason != reason {
				reason = sk.reason
				fmt.Fprintf(w, "  %s\n", reason)
			}
			fmt.Fprintf(w, "    %s\n", sk.test)
		}
	}
}

func sortedByReason(tests []skipped) []skipped {
	out := append([]skipped(nil), tests...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].reason < out[j].reason })
	return out
}

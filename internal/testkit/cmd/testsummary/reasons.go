package main

import (
	"fmt"
	"regexp"
	"strings"
)

// A skip group is what its tests lack, in a few words: "need versitygw",
// or, for a reason no rule knows, the reason's first words.
type group struct {
	needs string // what the tests need ("versitygw"), or empty
	words string // otherwise the reason's first words
}

// label is the group as the summary line shows it after the count n.
func (g group) label(n int) string {
	if g.needs != "" {
		verb := "need"
		if n == 1 {
			verb = "needs"
		}
		return fmt.Sprintf("%d %s %s", n, verb, g.needs)
	}
	return fmt.Sprintf("%d × %q", n, g.words)
}

// needRules turn the skip messages of this repository's helpers
// (internal/testkit/testenv and the tests' own) into what is missing, so
// that one tool missing for many packages, each message naming its own
// paths, is one group. The first match wins; $1 is what is needed.
var needRules = []struct {
	re    *regexp.Regexp
	needs string // when set, the group regardless of the match
}{
	{re: regexp.MustCompile(`^make check leaves out what needs (.+)$`)},
	{re: regexp.MustCompile(`^tool "([^"]+)" not found`)},
	{re: regexp.MustCompile(`IGGY_TEST_ADDRESS points at a real server`), needs: "the in-repo broker"},
	{re: regexp.MustCompile(`^set (\S+) to `)},
	{re: regexp.MustCompile(`^no \.bin/([^\s:]+)`)},
	{re: regexp.MustCompile(`^(.+?) (?:is|are) (?:missing|not installed)\b`)},
	{re: regexp.MustCompile(`^(\S+) not (?:on PATH|found|installed)\b`)},
	{re: regexp.MustCompile(`([A-Za-z][\w -]*?) cannot be used on this machine`)},
}

var parenthesised = regexp.MustCompile(`\s*\([^()]*\)`)

// maxWords caps a reason no rule knows: the line stays one short line and
// `-v` shows the whole reason.
const maxWords = 6

// groupOf returns the group of a skip reason (as skipReason found it).
func groupOf(reason string) group {
	r := strings.TrimSpace(parenthesised.ReplaceAllString(reason, ""))
	r = strings.TrimPrefix(r, "testenv: ")
	for _, rule := range needRules {
		m := rule.re.FindStringSubmatch(r)
		switch {
		case m == nil:
			continue
		case rule.needs != "":
			return group{needs: rule.needs}
		default:
			return group{needs: m[1]}
		}
	}
	// The first clause, in at most maxWords words.
	if i := strings.IndexAny(r, ";:"); i > 0 {
		r = r[:i]
	}
	words := strings.Fields(r)
	switch {
	case len(words) == 0:
		return group{words: "no reason given"}
	case len(words) > maxWords:
		return group{words: strings.Join(words[:maxWords], " ") + "…"}
	}
	return group{words: strings.Join(words, " ")}
}

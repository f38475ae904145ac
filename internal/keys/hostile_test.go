package keys

import (
	"errors"
	"strings"
	"testing"
)

// checkUnderPrefix fails unless key starts with prefix/ (prefix trimmed of
// '/') and no '/'-separated part of it is empty, "." or "..".
func checkUnderPrefix(t *testing.T, prefix, key string) {
	t.Helper()
	if p := strings.Trim(prefix, "/"); p != "" && !strings.HasPrefix(key, p+"/") {
		t.Fatalf("key %q is not under prefix %q", key, p)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "" || part == "." || part == ".." {
			t.Fatalf("key %q has the path part %q", key, part)
		}
	}
}

// TestHostileNamesStayUnderPrefix (issue 15 item 3): stream and topic names
// that are path tricks render to a segment that keeps the key in place;
// names that are already safe render exactly as upstream renders them.
func TestHostileNamesStayUnderPrefix(t *testing.T) {
	tpl := mustParse(t, "{stream}/{topic}/{date}")
	for _, tc := range []struct{ name, segment string }{
		{"..", "__"},
		{".", "_"},
		{"", "_"},
		{"../..", ".._.."},
		{"a/../b", "a_.._b"},
		{"...", "..."}, // not special to any path resolver; upstream renders it so
		{".hidden", ".hidden"},
		{"app_logs", "app_logs"},
		{"orders v2", "orders_v2"},
	} {
		if got := Segment(tc.name); got != tc.segment {
			t.Errorf("Segment(%q) = %q, want %q", tc.name, got, tc.segment)
		}
		for _, pair := range []Pair{{tc.name, "t"}, {"s", tc.name}, {tc.name, tc.name}} {
			key := NewNamer("arch", tpl, "jsonl").Partition(pair.Stream, pair.Topic, 0).Object(0, 1, upstreamTS)
			checkUnderPrefix(t, "arch", key)
			gap := NewNamer("arch", tpl, "jsonl").Partition(pair.Stream, pair.Topic, 0).Gap(0, 1, upstreamTS)
			checkUnderPrefix(t, "arch", gap)
		}
	}
	if got := NewNamer("arch", tpl, "jsonl").Partition("..", "t", 0).Object(0, 1, upstreamTS); got != "arch/__/t/2024-03-16/00000-00000000000000000000-00000000000000000001.jsonl" {
		t.Errorf("stream \"..\" renders as %q", got)
	}
}

// TestPrefixAndTemplateRefused (issue 15 item 3): a prefix or template whose
// fixed text would put keys outside the prefix, or give them an empty part,
// is refused with a message saying which part.
func TestPrefixAndTemplateRefused(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"../", `".."`},
		{"..", `".."`},
		{"a/../b", `part 2 of "a/../b"`},
		{"./a", `"."`},
		{"a//b", "empty"},
	} {
		err := CheckPrefix(tc.prefix)
		if !errors.Is(err, ErrInvalidPrefix) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckPrefix(%q) = %v, want ErrInvalidPrefix mentioning %s", tc.prefix, err, tc.want)
		}
	}
	for _, ok := range []string{"", "/", "iggy/raw", "/data/", "a.b/..c/c..", "..."} {
		if err := CheckPrefix(ok); err != nil {
			t.Errorf("CheckPrefix(%q) = %v, want nil", ok, err)
		}
	}
	for _, tc := range []struct{ template, want string }{
		{"../../{stream}", `path part 1 ("..")`},
		{"{stream}/../x", `path part 2 ("..")`},
		{"./{stream}", `path part 1 (".")`},
		{"/{stream}", "path part 1 (\"\") is empty"},
		{"{stream}/", "path part 2 (\"\") is empty"},
		{"{stream}//{topic}", "path part 2 (\"\") is empty"},
		{"{stream}-{topic}", "{stream} and {topic}"},
		{"x/{topic}{timestamp}", "{topic} and {timestamp}"},
		{"{stream}{stream}", "{stream} and {stream}"},
	} {
		_, err := ParseTemplate(tc.template)
		if !errors.Is(err, ErrInvalidTemplate) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTemplate(%q) = %v, want ErrInvalidTemplate mentioning %s", tc.template, err, tc.want)
		}
	}
	for _, ok := range []string{"{stream}/{topic}/{date}/{hour}", "stream={stream}/topic={topic}", "{stream}_{date}", "{topic}{partition}", "...{stream}", "a.{stream}.b/{timestamp}"} {
		if _, err := ParseTemplate(ok); err != nil {
			t.Errorf("ParseTemplate(%q) = %v, want nil", ok, err)
		}
	}
}

// TestNamesRenderingToOneSegmentCollide (issue 10 case 2): names a real Iggy
// 0.8.0 server accepts side by side but that render to the same key segment
// are reported, naming both; names that differ after rendering are not.
func TestNamesRenderingToOneSegmentCollide(t *testing.T) {
	tests := []struct {
		template string
		pairs    []Pair
		want     string // "" = no collision
	}{
		{"{stream}/{topic}", []Pair{{"app", "orders v2"}, {"app", "orders_v2"}}, `{topic}="orders_v2"`},
		{"{stream}/{topic}", []Pair{{"app", "café"}, {"app", "cafè"}}, `{topic}="caf_"`},
		{"{stream}/{topic}", []Pair{{"a b", "t"}, {"a_b", "t"}}, `{stream}="a_b"`},
		{"{stream}/{topic}", []Pair{{"..", "t"}, {"__", "t"}}, `{stream}="__"`},
		{"{stream}/{topic}", []Pair{{"a b", "t"}, {"a_b", "u"}}, ""},
		{"{topic}", []Pair{{"s1", "x y"}, {"s2", "x_y"}}, `{topic}="x_y"`},
		{"{date}", []Pair{{"s", "a"}, {"s", "b"}}, "neither {stream} nor {topic}"},
		{"{stream}/{topic}", []Pair{{"app", "orders"}, {"app", "orders"}}, ""}, // the same pair twice is not two topics
	}
	for _, tc := range tests {
		err := mustParse(t, tc.template).Collision(tc.pairs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: unexpected collision %v", tc.template, tc.pairs, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s %v: collision not found", tc.template, tc.pairs)
		case tc.want != "":
			msg := err.Error()
			for _, w := range []string{tc.want, `"` + tc.pairs[0].Topic + `"`, `"` + tc.pairs[1].Topic + `"`, `"` + tc.pairs[0].Stream + `"`, `"` + tc.pairs[1].Stream + `"`} {
				if !strings.Contains(msg, w) {
					t.Errorf("%s %v: %q does not mention %s", tc.template, tc.pairs, msg, w)
				}
			}
		}
	}
}

package audit

import (
	"strings"
	"testing"
)

func u(v uint64) *uint64 { return &v }

func TestVerify(t *testing.T) {
	obj := func(f, l uint64) Range { return Range{First: f, Last: l, Key: "k"} }
	gap := func(f, l uint64) Range { return Range{First: f, Last: l, Key: "g", Gap: true} }
	tests := []struct {
		name      string
		ranges    []Range
		committed *uint64
		ok        bool
		want      string // substring of the finding, when !ok
		messages  uint64
	}{
		{"contiguous", []Range{obj(0, 9), obj(10, 19), obj(20, 20)}, u(20), true, "", 21},
		{"unordered input", []Range{obj(10, 19), obj(0, 9)}, u(19), true, "", 20},
		{"reported gap", []Range{obj(0, 9), gap(10, 14), obj(15, 19)}, u(19), true, "", 15},
		{"planted gap", []Range{obj(0, 9), obj(12, 19)}, u(19), false, "offsets 10..11", 18},
		{"planted overlap", []Range{obj(0, 9), obj(9, 19)}, u(19), false, "overlaps", 21},
		{"duplicate object", []Range{obj(0, 9), obj(0, 9)}, u(9), false, "overlaps", 20},
		{"committed beyond objects", []Range{obj(0, 9)}, u(15), false, "10..15", 10},
		{"objects ahead of commit", []Range{obj(0, 9), obj(10, 19)}, u(9), true, "", 20},
		{"committed, no objects", nil, u(3), false, "no objects", 0},
		{"nothing at all", nil, nil, true, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Verify(Partition{Stream: "s", Topic: "t", Partition: 1, Committed: tc.committed}, tc.ranges)
			if r.OK() != tc.ok {
				t.Fatalf("OK() = %v, want %v (overlaps %v, gaps %v)", r.OK(), tc.ok, r.Overlaps, r.Gaps)
			}
			if !tc.ok {
				all := strings.Join(append(r.Overlaps, r.Gaps...), "\n")
				if !strings.Contains(all, tc.want) {
					t.Fatalf("findings %q do not mention %q", all, tc.want)
				}
			}
			if r.Messages != tc.messages {
				t.Fatalf("messages = %d, want %d", r.Messages, tc.messages)
			}
		})
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		key  string
		ok   bool
		gap  bool
		f, l uint64
	}{
		{"p/s/t/2024-03-16/14/00001-00000000000000000000-00000000000000000099.jsonl", true, false, 0, 99},
		{"p/s/t/00001-00000000000000000005-00000000000000000010.jsonl.gz", true, false, 5, 10},
		{"p/s/t/_00001-00000000000000000100-00000000000000000199.gap", true, true, 100, 199},
		{"p/s/t/00002-00000000000000000000-00000000000000000099.jsonl", false, false, 0, 0},  // other partition
		{"p/s/t/_00001-00000000000000000000-00000000000000000099.jsonl", false, false, 0, 0}, // underscore but not a marker
		{"p/s/t/00001-00000000000000000000-00000000000000000099.gap", false, false, 0, 0},    // marker without underscore
		{"p/s/t/notes.txt", false, false, 0, 0},
	}
	for _, tc := range tests {
		r, ok := parseRange(tc.key, 1)
		if ok != tc.ok || (ok && (r.Gap != tc.gap || r.First != tc.f || r.Last != tc.l)) {
			t.Errorf("parseRange(%q) = %+v, %v", tc.key, r, ok)
		}
	}
}

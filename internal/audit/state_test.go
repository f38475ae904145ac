package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// TestCheckAgainstState: the state's last written offset must be covered
// by objects; objects beyond it are an unfinished intent or a note, never
// a violation; a state at another generation is not compared.
func TestCheckAgainstState(t *testing.T) {
	tp, err := keys.ParseTemplate("{stream}/{topic}")
	if err != nil {
		t.Fatal(err)
	}
	names := keys.NewNamer("", tp, "jsonl")
	pn := names.Partition("s", "t", 0)
	l := listing{pn.Object(0, 9, 0): 10, pn.Gap(10, 14, 0): 1, pn.Object(15, 29, 0): 10}
	tests := []struct {
		name  string
		state *State
		ok    bool
		want  string // substring of a finding (gap) or note
	}{
		{"no state read", nil, true, ""},
		{"state agrees", &State{Written: u(29)}, true, ""},
		{"state ahead of the objects", &State{Written: u(40)}, false, "offsets 30..40: recorded written in the state but in no object"},
		{"unfinished intent", &State{Written: u(14), HasIntent: true, IntentFirst: 15, IntentLast: 29}, true, "unfinished intent 15..29"},
		{"objects beyond the state", &State{Written: u(9)}, true, "beyond the state's last written offset 9"},
		{"nothing written per the state", &State{}, true, "the state records nothing written"},
		{"state at a later generation", &State{Generation: 1, Written: u(3)}, true, "generation 1, which has no objects yet"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reports, err := Check(context.Background(), l, names, []Partition{{Stream: "s", Topic: "t", Partition: 0, Committed: u(29), State: tc.state}})
			if err != nil {
				t.Fatal(err)
			}
			r := reports[len(reports)-1]
			if r.OK() != tc.ok {
				t.Fatalf("OK = %v, want %v: gaps %v overlaps %v notes %v", r.OK(), tc.ok, r.Gaps, r.Overlaps, r.Notes)
			}
			all := strings.Join(append(append(r.Gaps, r.Overlaps...), r.Notes...), "\n")
			if tc.want == "" && all != "" || !strings.Contains(all, tc.want) {
				t.Fatalf("findings %q, want %q", all, tc.want)
			}
		})
	}
}

// TestCheckProgress: a long listing reports its progress every page and at
// the end of each partition, with running totals.
func TestCheckProgress(t *testing.T) {
	tp, _ := keys.ParseTemplate("{stream}/{topic}/{partition}") // one folder per partition: listings do not overlap
	names := keys.NewNamer("p", tp, "jsonl")
	l := listing{}
	var parts []Partition
	for part := range uint32(2) {
		pn := names.Partition("s", "t", part)
		for i := range uint64(2500) {
			l[pn.Object(i, i, 0)] = 1
		}
		parts = append(parts, Partition{Stream: "s", Topic: "t", Partition: part})
	}
	var got []string
	_, err := CheckWith(context.Background(), l, names, parts, Options{Progress: func(p Progress) {
		got = append(got, fmt.Sprintf("%d/%d p%d listed=%d total=%d done=%v", p.Index, p.Partitions, p.Partition, p.Listed, p.Total, p.Done))
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0/2 p0 listed=1000 total=1000 done=false", "0/2 p0 listed=2000 total=2000 done=false", "0/2 p0 listed=2500 total=2500 done=true",
		"1/2 p1 listed=1000 total=3500 done=false", "1/2 p1 listed=2000 total=4500 done=false", "1/2 p1 listed=2500 total=5000 done=true",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// countingListing counts the listings made.
type countingListing struct {
	listing
	prefixes []string
}

func (c *countingListing) List(ctx context.Context, prefix string, fn func(string, int64) error) error {
	c.prefixes = append(c.prefixes, prefix)
	return c.listing.List(ctx, prefix, fn)
}

// Under a time-first template every topic's keys share one listing prefix:
// the audit lists it once for all partitions (not once each), and still
// gives each partition its own objects only.
func TestCheckListsASharedPrefixOnce(t *testing.T) {
	tp, _ := keys.ParseTemplate("dt={date}/{stream}/{topic}")
	names := keys.NewNamer("p", tp, "jsonl").WithErrors("_errors")
	l := &countingListing{listing: listing{}}
	var parts []Partition
	for ti, topic := range []string{"a", "b", "c"} {
		for part := range uint32(2) {
			pn := names.Partition("s", topic, part)
			n := uint64(10 * (ti + 1)) // objects of 10 offsets: 10, 20, 30 offsets a partition
			for first := uint64(0); first < n; first += 10 {
				l.listing[pn.Object(first, first+9, 0)] = 1
			}
			l.listing[pn.Errors(0, 9, 0)] = 1
			parts = append(parts, Partition{Stream: "s", Topic: topic, Partition: part, Committed: u(n - 1)})
		}
	}
	var sharing []int
	reports, err := CheckWith(context.Background(), l, names, parts, Options{Progress: func(p Progress) { sharing = append(sharing, p.Sharing) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.prefixes) != 2 {
		t.Fatalf("listed %v; want the data prefix and the error prefix once each", l.prefixes)
	}
	if fmt.Sprint(sharing) != "[6]" {
		t.Errorf("progress calls with Sharing %v; want one done call for the listing the 6 partitions share", sharing)
	}
	if len(reports) != 6 {
		t.Fatalf("%d reports, want 6", len(reports))
	}
	for i, r := range reports {
		want := 10 * (i/2 + 1)
		if !r.OK() || r.Messages != uint64(want) || r.Objects != want/10 || r.ErrorObjects != 1 {
			t.Errorf("%s/%d: %+v; want %d objects of %d messages and one error object, clean", r.Topic, r.Partition, r, want/10, want)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	reports := []Report{
		Verify(Partition{Stream: "s", Topic: "t", Partition: 0, Committed: u(19)}, []Range{{First: 0, Last: 9, Key: "a", Size: 5}, {First: 10, Last: 19, Key: "b", Size: 5}}),
		Verify(Partition{Stream: "s", Topic: "t", Partition: 1, Committed: u(19)}, []Range{{First: 0, Last: 9, Key: "c"}, {First: 5, Last: 19, Key: "d"}}),
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, reports); err != nil {
		t.Fatal(err)
	}
	var v struct {
		OK         bool `json:"ok"`
		Partitions int  `json:"partitions"`
		Objects    int  `json:"objects"`
		Overlaps   int  `json:"overlaps"`
		Gaps       int  `json:"unreported_gaps"`
		Reports    []struct {
			Partition uint32   `json:"partition"`
			Overlaps  []string `json:"overlaps"`
			Committed *uint64  `json:"committed"`
		} `json:"reports"`
	}
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		t.Fatalf("%v:\n%s", err, buf.String())
	}
	if v.OK || v.Partitions != 2 || v.Objects != 4 || v.Overlaps != 1 || v.Gaps != 0 || len(v.Reports) != 2 ||
		len(v.Reports[1].Overlaps) != 1 || !strings.Contains(v.Reports[1].Overlaps[0], "d (5..19) overlaps c (0..9)") || *v.Reports[0].Committed != 19 {
		t.Fatalf("verdict %+v from:\n%s", v, buf.String())
	}
	if strings.Contains(buf.String(), "Ranges") {
		t.Fatalf("the JSON report carries the raw ranges:\n%s", buf.String())
	}
}

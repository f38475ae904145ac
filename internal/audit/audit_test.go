package audit

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
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

// listing is an in-memory Lister over a set of keys (pure logic).
type listing map[string]int64

func (l listing) List(_ context.Context, prefix string, fn func(string, int64) error) error {
	var ks []string
	for k := range l {
		if strings.HasPrefix(k, prefix) {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		if err := fn(k, l[k]); err != nil {
			return err
		}
	}
	return nil
}

// TestCheckFindsEveryMarker: gap markers count as covered for templates
// with and without a time placeholder (a listing prefix that ended in the
// file name's partition part missed the '_'-prefixed markers); void markers
// take their object out; each generation of a re-created partition is
// reported on its own, the newest against the committed offset.
func TestCheckFindsEveryMarker(t *testing.T) {
	for _, tpl := range []string{"{stream}/{topic}", "{stream}/{topic}/{partition}", "{stream}/{topic}/{date}"} {
		t.Run(tpl, func(t *testing.T) {
			tp, err := keys.ParseTemplate(tpl)
			if err != nil {
				t.Fatal(err)
			}
			names := keys.NewNamer("arch", tp, "jsonl")
			pn := names.Partition("s", "t", 1)
			other := names.Partition("s", "t", 2)
			voidedKey := pn.Object(10, 29, 0)
			marker, _ := keys.VoidMarker(voidedKey)
			l := listing{
				pn.Object(0, 9, 0): 10, pn.Gap(10, 14, 0): 1, voidedKey: 0, marker: 1, pn.Object(15, 29, 0): 10,
				other.Object(0, 99, 0):           99, // another partition in the same folder
				pn.Generation(1).Object(0, 4, 0): 5, pn.Generation(1).Object(5, 9, 0): 5,
			}
			reports, err := Check(context.Background(), l, names, []Partition{{Stream: "s", Topic: "t", Partition: 1, Committed: u(9)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 2 {
				t.Fatalf("%d reports, want one per generation: %+v", len(reports), reports)
			}
			old, cur := reports[0], reports[1]
			if !old.OK() || !old.Retired || old.Generation != 0 || old.GapMarkers != 1 || old.Voided != 1 || old.Messages != 25 {
				t.Errorf("generation 0: %+v", old)
			}
			if !cur.OK() || cur.Retired || cur.Generation != 1 || cur.Messages != 10 || cur.Committed == nil {
				t.Errorf("generation 1: %+v", cur)
			}
		})
	}
}

// TestCheckCountsErrorObjects: error objects are counted per partition and
// generation, cover nothing of their own (their data objects' ranges cover
// their offsets) and are never taken for data objects, wherever the error
// prefix lies; one without a data object of its range is noted.
func TestCheckCountsErrorObjects(t *testing.T) {
	for _, tc := range []struct{ tpl, errPrefix string }{
		{"{stream}/{topic}", "arch/_errors"},
		{"{date}/{stream}/{topic}", "arch/_errors"}, // the data listing prefix holds the error prefix
		{"{stream}/{topic}", "elsewhere"},
	} {
		t.Run(tc.tpl+" "+tc.errPrefix, func(t *testing.T) {
			tp, err := keys.ParseTemplate(tc.tpl)
			if err != nil {
				t.Fatal(err)
			}
			names := keys.NewNamer("arch", tp, "parquet").WithErrors(tc.errPrefix)
			pn := names.Partition("s", "t", 1)
			l := listing{
				pn.Object(0, 9, 0): 10, pn.Errors(0, 9, 0): 3,
				pn.Object(10, 19, 0): 10, pn.Errors(10, 19, 0): 3,
				pn.Object(20, 29, 0): 10, pn.Errors(20, 25, 0): 1, // no data object of that range
			}
			reports, err := Check(context.Background(), l, names, []Partition{{Stream: "s", Topic: "t", Partition: 1, Committed: u(29)}})
			if err != nil {
				t.Fatal(err)
			}
			r := reports[0]
			if len(reports) != 1 || !r.OK() || r.Objects != 3 || r.Messages != 30 || r.ErrorObjects != 3 {
				t.Fatalf("report %+v", r)
			}
			if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "has no data object of the same range") {
				t.Errorf("notes %q", r.Notes)
			}
			var out strings.Builder
			if err := Write(&out, reports); err != nil || !strings.Contains(out.String(), "3 error objects") {
				t.Errorf("written report %q", out.String())
			}
		})
	}
}

// An error object whose data key was voided fails the audit: its range was
// read again, so its records are in the next error objects too (issue 21,
// item 9). The empty error object a void leaves as the error key's fence is
// no error object.
func TestErrorObjectOfAVoidedKeyFails(t *testing.T) {
	tp, err := keys.ParseTemplate("{stream}/{topic}")
	if err != nil {
		t.Fatal(err)
	}
	names := keys.NewNamer("arch", tp, "jsonl").WithErrors("arch/_errors")
	pn := names.Partition("s", "t", 1)
	voidedKey := pn.Object(0, 59, 0)
	marker, _ := keys.VoidMarker(voidedKey)
	for _, tc := range []struct {
		name    string
		errSize int64
		ok      bool
	}{{"the fence", 0, true}, {"records", 120, false}} {
		t.Run(tc.name, func(t *testing.T) {
			l := listing{
				voidedKey: 0, marker: 1, pn.Errors(0, 59, 0): tc.errSize,
				pn.Object(0, 29, 0): 30, pn.Errors(0, 29, 0): 40, pn.Object(30, 59, 0): 30,
			}
			reports, err := Check(context.Background(), l, names, []Partition{{Stream: "s", Topic: "t", Partition: 1, Committed: u(59)}})
			if err != nil {
				t.Fatal(err)
			}
			r := reports[0]
			if r.OK() != tc.ok || (tc.ok && r.ErrorObjects != 1) || (!tc.ok && len(r.ErrorViolations) != 1) {
				t.Fatalf("report %+v; want OK %v", r, tc.ok)
			}
			var out strings.Builder
			if err := Write(&out, reports); err != nil || tc.ok == strings.Contains(out.String(), "belongs to a voided data key") {
				t.Fatalf("written report %q", out.String())
			}
		})
	}
}

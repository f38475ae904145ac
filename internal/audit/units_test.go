package audit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fields"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// store is an in-memory Lister and Getter (pure logic).
type store map[string][]byte

func (s store) List(ctx context.Context, prefix string, fn func(string, int64) error) error {
	l := listing{}
	for k, v := range s {
		l[k] = int64(len(v))
	}
	return l.List(ctx, prefix, fn)
}

func (s store) Get(_ context.Context, key string) ([]byte, error) {
	b, ok := s[key]
	if !ok {
		return nil, errors.New("no such key")
	}
	return b, nil
}

// TestUnits checks the audit of units split by payload values: a unit
// whose manifest lists its objects holds; one listed but missing, one of
// other bytes, or one unlisted beside a manifest fails, named with its
// offsets; one left of a unit not archived again is noted when no other
// object holds its offsets and fails when one does.
func TestUnits(t *testing.T) {
	tpl, err := keys.ParseTemplate("{stream}/{topic}/c={payload.c}")
	if err != nil {
		t.Fatal(err)
	}
	names := keys.NewNamer("p", tpl, "jsonl")
	pn := names.Partition("s", "t", 0)
	unit := func(st store, first, last uint64, values map[string][2]uint64, write bool) string {
		key := pn.Object(first, last, 0)
		m := fields.Manifest{First: first, Last: last, Records: last - first + 1}
		for v, span := range values {
			vk, _ := pn.ValueObject(key, 0, []string{v})
			st[vk] = []byte("0123456789")[:span[1]]
			m.Objects = append(m.Objects, fields.ValueObject{Key: vk, Value: []string{v}, Records: span[0], First: first, Last: last, Bytes: int64(span[1])})
		}
		if write {
			st[key] = m.Marshal()
		}
		return key
	}
	committed := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name   string
		build  func(st store)
		commit uint64
		want   string // a violation's text; "" for none
		note   string // a note's text
	}{
		{"whole units", func(st store) {
			unit(st, 0, 9, map[string][2]uint64{"DE": {6, 3}, "FR": {4, 2}}, true)
			unit(st, 10, 19, map[string][2]uint64{"DE": {10, 5}}, true)
		}, 19, "", ""},
		{"a listed object missing", func(st store) {
			unit(st, 0, 9, map[string][2]uint64{"DE": {6, 3}, "FR": {4, 2}}, true)
			vk, _ := pn.ValueObject(pn.Object(0, 9, 0), 0, []string{"FR"})
			delete(st, vk)
		}, 9, "c=FR/00000-00000000000000000000-00000000000000000009.jsonl is missing: 4 records of offsets 0..9", ""},
		{"an object of other bytes", func(st store) {
			unit(st, 0, 9, map[string][2]uint64{"DE": {10, 3}}, true)
			vk, _ := pn.ValueObject(pn.Object(0, 9, 0), 0, []string{"DE"})
			st[vk] = []byte("x")
		}, 9, "holds 1 bytes, its unit's manifest says 3", ""},
		{"an unlisted object beside a manifest", func(st store) {
			key := unit(st, 0, 9, map[string][2]uint64{"DE": {10, 3}}, true)
			vk, _ := pn.ValueObject(key, 0, []string{"US"})
			st[vk] = []byte("zz")
		}, 9, "is not listed by its unit's manifest", ""},
		{"left of a unit, nothing else holds its offsets", func(st store) {
			unit(st, 0, 9, map[string][2]uint64{"DE": {6, 3}}, false)
			st[pn.Gap(0, 9, 0)] = []byte("{}")
			unit(st, 10, 19, map[string][2]uint64{"DE": {10, 5}}, true)
		}, 19, "", "is left of a unit a run died writing"},
		{"left of a unit, another unit holds its offsets", func(st store) {
			unit(st, 0, 9, map[string][2]uint64{"DE": {6, 3}}, false)
			unit(st, 0, 19, map[string][2]uint64{"DE": {20, 5}}, true)
		}, 19, "its records may be archived twice", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store{}
			tc.build(st)
			reps, err := Check(context.Background(), st, names, []Partition{{Stream: "s", Topic: "t", Partition: 0, Committed: committed(tc.commit)}})
			if err != nil {
				t.Fatal(err)
			}
			r := reps[0]
			all := strings.Join(append(append(r.ValueViolations, r.Overlaps...), r.Gaps...), "\n")
			switch {
			case tc.want == "" && !r.OK():
				t.Fatalf("the audit fails: %s", all)
			case tc.want != "" && !strings.Contains(all, tc.want):
				t.Fatalf("findings %q do not say %q", all, tc.want)
			case tc.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tc.note):
				t.Fatalf("notes %q do not say %q", r.Notes, tc.note)
			}
		})
	}
}

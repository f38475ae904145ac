package audit

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fields"
)

// Getter reads an object (*s3store.Uploader): under a path template with
// payload fields the audit reads each unit's manifest.
type Getter interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// unitCheck is what checking a partition's units found, by generation.
type unitCheck struct {
	violations map[uint32][]string
	notes      map[uint32][]string
}

func (u *unitCheck) violate(gen uint32, format string, args ...any) {
	if u.violations == nil {
		u.violations = map[uint32][]string{}
	}
	u.violations[gen] = append(u.violations[gen], fmt.Sprintf(format, args...))
}

func (u *unitCheck) note(gen uint32, format string, args ...any) {
	if u.notes == nil {
		u.notes = map[uint32][]string{}
	}
	u.notes[gen] = append(u.notes[gen], fmt.Sprintf(format, args...))
}

// report adds the findings to the reports of their generations.
func (u unitCheck) report(reps []Report) {
	for i := range reps {
		g := reps[i].Generation
		reps[i].ValueViolations = append(reps[i].ValueViolations, u.violations[g]...)
		reps[i].Notes = append(reps[i].Notes, u.notes[g]...)
	}
}

// checkUnits checks every unit manifest of a partition against the value
// objects listed: each object it lists must be there with the size it
// recorded, and every value object must be listed by the manifest of its
// range. A manifest that holds is its unit's proof (its objects' records
// add up to its range, fields.ParseManifest), so its range counts like a
// data object's, with its objects' bytes. Value objects of a range whose
// manifest is not there yet are the unfinished unit's when the state's
// intent is that range (a run died; the next one finishes it), and
// violations otherwise.
func checkUnits(ctx context.Context, l Lister, p Partition, f *listed) (unitCheck, error) {
	var u unitCheck
	g, ok := l.(Getter)
	if !ok && len(f.ranges) > 0 {
		return u, errors.New("audit: reading unit manifests needs a store that can get objects")
	}
	type unitID struct {
		gen         uint32
		first, last uint64
	}
	units := map[unitID]string{}
	for i := range f.ranges {
		r := &f.ranges[i]
		if !r.Unit {
			continue
		}
		units[unitID{r.Generation, r.First, r.Last}] = r.Key
		if f.voided[r.Key] {
			continue
		}
		body, err := g.Get(ctx, r.Key)
		if err != nil {
			return u, fmt.Errorf("audit: read the unit manifest %s: %w", r.Key, err)
		}
		m, err := fields.ParseManifest(body)
		if err == nil && (m.First != r.First || m.Last != r.Last || m.Partition != p.Partition) {
			err = fmt.Errorf("it says partition %d offsets %d..%d", m.Partition, m.First, m.Last)
		}
		if err != nil {
			u.violate(r.Generation, "unit %s (offsets %d..%d): its manifest cannot hold: %v", r.Key, r.First, r.Last, err)
			continue
		}
		r.Size = 0
		r.Files = make([]string, 0, len(m.Objects))
		for _, o := range m.Objects {
			r.Files = append(r.Files, o.Key)
			v, there := f.values[o.Key]
			switch {
			case !there:
				u.violate(r.Generation, "%s is missing: %d records of offsets %d..%d (value %v) of the unit %s", o.Key, o.Records, o.First, o.Last, o.Value, r.Key)
			case v.Size != o.Bytes:
				u.violate(r.Generation, "%s holds %d bytes, its unit's manifest says %d (replaced after it was written?)", o.Key, v.Size, o.Bytes)
			}
			r.Size += o.Bytes
			delete(f.values, o.Key)
		}
	}
	extra := make([]string, 0, len(f.values))
	for k := range f.values {
		extra = append(extra, k)
	}
	sort.Strings(extra)
	for _, k := range extra {
		v := f.values[k]
		key, hasUnit := units[unitID{v.Generation, v.First, v.Last}]
		st := p.State
		switch {
		case hasUnit && !f.voided[key]:
			u.violate(v.Generation, "%s (offsets %d..%d) is not listed by its unit's manifest %s", k, v.First, v.Last, key)
		case st != nil && st.Generation == v.Generation && st.HasIntent && st.IntentFirst == v.First && st.IntentLast == v.Last:
			u.note(v.Generation, "%s (offsets %d..%d) belongs to the unfinished unit the state records (a run died writing it; the next run finishes it)", k, v.First, v.Last)
		case overlapsData(f, v):
			u.violate(v.Generation, "%s (offsets %d..%d) is listed by no unit's manifest, and other objects hold offsets of its range: its records may be archived twice", k, v.First, v.Last)
		default:
			// A run died writing its unit, whose range could not be read
			// again (Iggy deleted it, or the topic was re-created) or whose
			// intent a replaced state table lost: no other object holds
			// its offsets.
			u.note(v.Generation, "%s (offsets %d..%d) is left of a unit a run died writing, whose range was not archived again: its records are in no other object (the offsets are a gap of the archive)", k, v.First, v.Last)
		}
	}
	return u, nil
}

// overlapsData reports whether a data object or a unit of v's generation
// (not voided) holds offsets of v's range.
func overlapsData(f *listed, v Range) bool {
	for _, r := range f.ranges {
		if r.Generation == v.Generation && !r.Gap && !f.voided[r.Key] && r.First <= v.Last && v.First <= r.Last {
			return true
		}
	}
	return false
}

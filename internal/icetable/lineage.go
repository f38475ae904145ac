package icetable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// RangesSnapshotProperty is the table property naming the snapshot that
// RangesProperty describes, as "<snapshot id>/<sequence number>" ("" and 0
// for a table without snapshots). A commit that adds files names the
// snapshot it creates; one that only moves positions over gaps names the
// snapshot it was pinned to.
const RangesSnapshotProperty = "iggy-s3-sink.ranges-snapshot"

// RangesParentProperty is the snapshot summary key holding, beside
// RangesProperty, the positions of the snapshot a commit was made on (its
// parent): a rollback to that parent after the history below it expired
// is read from it.
const RangesParentProperty = "iggy-s3-sink.ranges-parent"

// ErrLineageLost reports a table whose current snapshot neither descends
// from the snapshot the ranges describe nor has any of the sink's commits
// left in its history or made on it (rolled back, then the history
// expired): what the table holds cannot be told from its metadata, and
// guessing would lose or double offsets.
var ErrLineageLost = errors.New("icetable: the table was rolled back past the sink's commits and their history expired")

// registered is what a table holds of the sink's archive.
type registered struct {
	ranges Ranges
	// rewound: the positions come from an older commit than the last one
	// (the table was rolled back or reset): a file planned again may be
	// in the table already (a cherry-pick), so the plan checks its paths.
	rewound bool
}

// tableRanges reads the positions a table holds (none for a missing table).
func tableRanges(tbl *table.Table) (Ranges, error) {
	r, err := registeredOf(tbl)
	return r.ranges, err
}

// registeredOf reads the positions the table's current snapshot holds.
//
// The table property is written by every commit, but a rollback, a branch
// reset or a cherry-pick moves the current snapshot without touching it;
// each of the sink's snapshots carries its own positions in its summary.
// So the property holds only when the snapshot it names is the current one
// or an ancestor of it (later snapshots being others' appends, compactions
// or deletes, which remove none of the sink's rows unless an operator
// deletes them). Otherwise the nearest of the sink's snapshots in the
// current lineage says what the table holds; where that history expired
// (a rollback to a compaction whose parent is gone), a commit of the
// sink's made on one of the walked snapshots says it (its parent's
// positions).
func registeredOf(tbl *table.Table) (registered, error) {
	if tbl == nil {
		return registered{ranges: Ranges{}}, nil
	}
	props := tbl.Properties()
	prop, err := ParseRanges(props.Get(RangesProperty, ""))
	if err != nil {
		return registered{}, err
	}
	v, named := props[RangesSnapshotProperty]
	if !named {
		// Written before the property existed: its ranges, as then.
		return registered{ranges: prop}, nil
	}
	described, seq, err := parseSnapshotRef(v)
	if err != nil {
		return registered{}, err
	}
	meta := tbl.Metadata()
	var walked []int64 // the current snapshot and its ancestors, nearest first
	for s := tbl.CurrentSnapshot(); s != nil; {
		walked = append(walked, s.SnapshotID)
		if described != "" && strconv.FormatInt(s.SnapshotID, 10) == described {
			return registered{ranges: prop}, nil
		}
		if s.Summary != nil {
			if sv, ok := s.Summary.Properties[RangesProperty]; ok {
				r, err := ParseRanges(sv)
				if err != nil {
					return registered{}, fmt.Errorf("snapshot %d's summary: %w", s.SnapshotID, err)
				}
				return registered{ranges: r, rewound: true}, nil
			}
		}
		if s.ParentSnapshotID == nil {
			break // the lineage's first snapshot
		}
		parent := meta.SnapshotByID(*s.ParentSnapshotID)
		if parent == nil {
			// The history before s expired. A commit of the sink's made
			// on a walked snapshot says what it holds (the current
			// snapshot cannot descend from that commit: the walk would
			// have met it), even where a later commit on the rolled-back
			// table moved the sequence past the named snapshot's.
			if r, ok, err := madeOn(meta, walked); ok || err != nil {
				return registered{ranges: r, rewound: true}, err
			}
			// Snapshots only grow in sequence: a current snapshot at or
			// past the named one's descends from it, short of a reset to
			// another branch, or a rollback below it followed by another
			// commit before the sink ran again (docs/guarantee.md).
			if cur := tbl.CurrentSnapshot(); cur.SequenceNumber >= seq {
				return registered{ranges: prop}, nil
			}
			return registered{}, fmt.Errorf("%w (the ranges describe snapshot %s, the table is at snapshot %d): set %s to what the table holds and remove %s, or recreate the table",
				ErrLineageLost, described, tbl.CurrentSnapshot().SnapshotID, RangesProperty, RangesSnapshotProperty)
		}
		s = parent
	}
	if described == "" {
		// The ranges were set on a table without snapshots (gaps only):
		// every snapshot came after them.
		return registered{ranges: prop}, nil
	}
	// No snapshot of the sink's is left in the table's lineage: it holds
	// none of the archive.
	return registered{ranges: Ranges{}, rewound: true}, nil
}

// madeOn reads the positions of the nearest of the walked snapshots from
// a commit of the sink's made on it (its RangesParentProperty).
func madeOn(meta table.Metadata, walked []int64) (Ranges, bool, error) {
	children := map[int64]table.Snapshot{}
	for _, c := range meta.Snapshots() {
		if c.ParentSnapshotID == nil || c.Summary == nil {
			continue
		}
		if _, ok := c.Summary.Properties[RangesParentProperty]; ok {
			children[*c.ParentSnapshotID] = c
		}
	}
	for _, id := range walked {
		c, ok := children[id]
		if !ok {
			continue
		}
		r, err := ParseRanges(c.Summary.Properties[RangesParentProperty])
		if err != nil {
			return nil, false, fmt.Errorf("snapshot %d's summary: %s: %w", c.SnapshotID, RangesParentProperty, err)
		}
		return r, true, nil
	}
	return nil, false, nil
}

// snapshotRef renders RangesSnapshotProperty's value for snapshot s (nil:
// the table has none).
func snapshotRef(s *table.Snapshot) string {
	if s == nil {
		return "/0"
	}
	return strconv.FormatInt(s.SnapshotID, 10) + "/" + strconv.FormatInt(s.SequenceNumber, 10)
}

func parseSnapshotRef(v string) (id string, seq int64, err error) {
	id, seqs, ok := strings.Cut(v, "/")
	if ok {
		seq, err = strconv.ParseInt(seqs, 10, 64)
	}
	if id != "" && err == nil {
		_, err = strconv.ParseInt(id, 10, 64)
	}
	if !ok || err != nil || seq < 0 {
		return "", 0, fmt.Errorf("icetable: %s is %q, want <snapshot id>/<sequence number>", RangesSnapshotProperty, v)
	}
	return id, seq, nil
}

// notInTable drops the items whose object is a data file of the table's
// current snapshot already.
func (r *Registrar) notInTable(ctx context.Context, tbl *table.Table, items []Item) ([]Item, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return items, nil
	}
	paths, err := dataFiles(ctx, r, tbl, snap)
	if err != nil {
		return nil, err
	}
	in := make(map[string]bool, len(paths))
	for _, p := range paths {
		in[p] = true
	}
	out := items[:0:0]
	for _, it := range items {
		// A unit's files are registered in one commit: all are in, or none.
		if !in[r.Path(it.files()[0])] {
			out = append(out, it)
		}
	}
	return out, nil
}

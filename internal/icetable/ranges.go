package icetable

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// RangesProperty is the snapshot summary key, and the table property, that
// holds every partition's registered position as JSON.
const RangesProperty = "iggy-s3-sink.ranges"

// PartitionID names one Iggy partition.
type PartitionID struct {
	Stream, Topic string
	Partition     uint32
}

func (p PartitionID) String() string { return fmt.Sprintf("%s/%s/%d", p.Stream, p.Topic, p.Partition) }

// Position is how far a partition is registered: every offset up to and
// including Last of Generation is in a registered data file, or in a gap
// marker or an empty object (which hold no rows).
type Position struct {
	Generation uint32
	Last       uint64
}

// Before reports whether p comes before q in a partition's history.
func (p Position) Before(q Position) bool {
	return p.Generation < q.Generation || p.Generation == q.Generation && p.Last < q.Last
}

// Ranges is every partition's registered position.
type Ranges map[PartitionID]Position

type rangeJSON struct {
	Stream     string `json:"stream"`
	Topic      string `json:"topic"`
	Partition  uint32 `json:"partition"`
	Generation uint32 `json:"generation"`
	Last       uint64 `json:"last_offset"`
}

// ParseRanges reads RangesProperty's value; "" is no ranges.
func ParseRanges(s string) (Ranges, error) {
	r := Ranges{}
	if s == "" {
		return r, nil
	}
	var list []rangeJSON
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return nil, fmt.Errorf("icetable: %s is not a list of ranges: %w", RangesProperty, err)
	}
	for _, e := range list {
		id := PartitionID{e.Stream, e.Topic, e.Partition}
		if e.Stream == "" || e.Topic == "" {
			return nil, fmt.Errorf("icetable: %s: a range without stream or topic (%s)", RangesProperty, id)
		}
		if _, dup := r[id]; dup {
			return nil, fmt.Errorf("icetable: %s: partition %s appears twice", RangesProperty, id)
		}
		r[id] = Position{e.Generation, e.Last}
	}
	return r, nil
}

// String is RangesProperty's value: the ranges sorted by partition, so
// equal ranges render equal.
func (r Ranges) String() string {
	list := make([]rangeJSON, 0, len(r))
	for id, p := range r {
		list = append(list, rangeJSON{id.Stream, id.Topic, id.Partition, p.Generation, p.Last})
	}
	slices.SortFunc(list, func(a, b rangeJSON) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	b, _ := json.Marshal(list) // strings and numbers only: cannot fail
	return string(b)
}

// Covers reports whether r has every partition of s at or past s's position.
func (r Ranges) Covers(s Ranges) bool {
	for id, p := range s {
		q, ok := r[id]
		if !ok || q.Before(p) {
			return false
		}
	}
	return true
}

package audit

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// Lister lists object keys under a prefix (*s3store.Uploader).
type Lister interface {
	List(ctx context.Context, prefix string, fn func(key string, size int64) error) error
}

// Partition is one partition to check, with the consumer group's committed
// offset (nil when the group has stored none).
type Partition struct {
	Stream, Topic string
	Partition     uint32
	Committed     *uint64
}

// Range is one object, or one gap marker, of a partition.
type Range struct {
	First, Last uint64
	Key         string
	Gap         bool
	Size        int64
}

// Report is the verdict for one partition.
type Report struct {
	Stream     string   `json:"stream"`
	Topic      string   `json:"topic"`
	Partition  uint32   `json:"partition"`
	Objects    int      `json:"objects"`
	GapMarkers int      `json:"gap_markers"`
	Messages   uint64   `json:"messages"`
	Bytes      int64    `json:"bytes"`
	First      *uint64  `json:"first,omitempty"`
	Last       *uint64  `json:"last,omitempty"`
	Committed  *uint64  `json:"committed,omitempty"`
	Overlaps   []string `json:"overlaps,omitempty"`
	Gaps       []string `json:"unreported_gaps,omitempty"`
	// Notes are findings that are not violations, e.g. objects written
	// beyond the committed offset by a run that died before committing.
	Notes []string `json:"notes,omitempty"`
	// Ranges are the objects in offset order.
	Ranges []Range `json:"-"`
}

// OK reports whether the partition holds the guarantee.
func (r *Report) OK() bool { return len(r.Overlaps) == 0 && len(r.Gaps) == 0 }

// Check lists every partition's objects and checks them.
func Check(ctx context.Context, l Lister, names *keys.Namer, parts []Partition) ([]Report, error) {
	reports := make([]Report, 0, len(parts))
	for _, p := range parts {
		lp := names.Partition(p.Stream, p.Topic, p.Partition).ListPrefix()
		var ranges []Range
		err := l.List(ctx, lp, func(key string, size int64) error {
			if r, ok := parseRange(key, p.Partition); ok {
				r.Size = size
				ranges = append(ranges, r)
			}
			return nil
		})
		if err != nil {
			return reports, fmt.Errorf("audit: list %q: %w", lp, err)
		}
		reports = append(reports, Verify(p, ranges))
	}
	return reports, nil
}

// parseRange reads a key's file name: one of partition's data objects or
// gap markers, or something else under the same prefix.
func parseRange(key string, partition uint32) (Range, bool) {
	n, ok := keys.ParseName(key)
	if !ok || n.Partition != partition {
		return Range{}, false
	}
	return Range{First: n.First, Last: n.Last, Key: key, Gap: n.Gap}, true
}

// Verify checks one partition's ranges (in any order).
func Verify(p Partition, ranges []Range) Report {
	rep := Report{Stream: p.Stream, Topic: p.Topic, Partition: p.Partition, Committed: p.Committed}
	sort.Slice(ranges, func(i, j int) bool {
		if ranges[i].First != ranges[j].First {
			return ranges[i].First < ranges[j].First
		}
		return ranges[i].Last < ranges[j].Last
	})
	rep.Ranges = ranges
	var prev *Range
	for i := range ranges {
		r := &ranges[i]
		if r.Gap {
			rep.GapMarkers++
		} else {
			rep.Objects++
			rep.Messages += r.Last - r.First + 1
			rep.Bytes += r.Size
		}
		if r.Last < r.First {
			rep.Overlaps = append(rep.Overlaps, fmt.Sprintf("%s: last offset %d before first %d", r.Key, r.Last, r.First))
			continue
		}
		if prev != nil {
			switch {
			case r.First <= prev.Last:
				rep.Overlaps = append(rep.Overlaps, fmt.Sprintf("%s (%d..%d) overlaps %s (%d..%d)", r.Key, r.First, r.Last, prev.Key, prev.First, prev.Last))
			case r.First > prev.Last+1:
				rep.Gaps = append(rep.Gaps, fmt.Sprintf("offsets %d..%d: in no object and no gap marker", prev.Last+1, r.First-1))
			}
		}
		if prev == nil || r.Last > prev.Last {
			prev = r
		}
	}
	if prev != nil {
		f, l := ranges[0].First, prev.Last
		rep.First, rep.Last = &f, &l
	}
	switch {
	case p.Committed == nil && prev != nil:
		rep.Notes = append(rep.Notes, fmt.Sprintf("objects up to offset %d but the group has no committed offset yet (the next run commits it)", prev.Last))
	case p.Committed != nil && prev == nil:
		rep.Gaps = append(rep.Gaps, fmt.Sprintf("the group committed offset %d but there are no objects", *p.Committed))
	case p.Committed != nil && *p.Committed > prev.Last:
		rep.Gaps = append(rep.Gaps, fmt.Sprintf("offsets %d..%d: committed by the group but in no object", prev.Last+1, *p.Committed))
	case p.Committed != nil && *p.Committed < prev.Last:
		rep.Notes = append(rep.Notes, fmt.Sprintf("objects up to offset %d are ahead of the committed offset %d (a run died before committing; the next run commits them)", prev.Last, *p.Committed))
	}
	return rep
}

// Write prints a per-partition report.
func Write(w io.Writer, reports []Report) error {
	for _, r := range reports {
		verdict := "ok"
		if !r.OK() {
			verdict = "FAIL"
		}
		span := "no objects"
		if r.First != nil {
			span = fmt.Sprintf("offsets %d..%d", *r.First, *r.Last)
		}
		committed := "none"
		if r.Committed != nil {
			committed = fmt.Sprint(*r.Committed)
		}
		if _, err := fmt.Fprintf(w, "%-4s %s/%s partition %d: %d objects, %d messages, %d bytes, %s, %d gap markers, committed %s\n",
			verdict, r.Stream, r.Topic, r.Partition, r.Objects, r.Messages, r.Bytes, span, r.GapMarkers, committed); err != nil {
			return err
		}
		for _, s := range r.Overlaps {
			fmt.Fprintf(w, "     overlap: %s\n", s)
		}
		for _, s := range r.Gaps {
			fmt.Fprintf(w, "     gap: %s\n", s)
		}
		for _, s := range r.Notes {
			fmt.Fprintf(w, "     note: %s\n", s)
		}
	}
	return nil
}

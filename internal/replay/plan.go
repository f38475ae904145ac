package replay

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/archive"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// Piece is one range of an archived partition: an object (or a unit's
// value objects, under a path template with payload fields), or a marker
// of offsets the archive does not hold.
type Piece struct {
	First, Last uint64
	// Keys are the objects holding the range's records; none for a marker.
	Keys []string
	// Marker, for a range without records, says why: "gap" (retention),
	// "hole" (offsets Iggy never had), "skip" (the group was moved past
	// them), "too large", or "renamed".
	Marker string
	Key    string
}

// Plan is one archived partition of one generation, in offset order.
type Plan struct {
	Partition uint32
	Pieces    []Piece
}

// ErrArchiveBroken is an archived partition the audit finds does not hold
// the guarantee (overlapping objects, broken units): replaying it could
// produce a message twice.
var ErrArchiveBroken = errors.New("the archive does not hold every offset in exactly one object")

// PlanOf turns the audit's report of a partition into a plan; it refuses a
// report that does not hold the guarantee. Unreported gaps are offsets the
// archive does not have: they stay gaps (Result.Missing names them).
func PlanOf(rep audit.Report) (Plan, error) {
	if len(rep.Overlaps) > 0 || len(rep.ValueViolations) > 0 || len(rep.ErrorViolations) > 0 {
		all := append(append(append([]string{}, rep.Overlaps...), rep.ValueViolations...), rep.ErrorViolations...)
		return Plan{}, fmt.Errorf("%w: %s/%s partition %d: %s (poller audit lists them)", ErrArchiveBroken, rep.Stream, rep.Topic, rep.Partition, strings.Join(all, "; "))
	}
	p := Plan{Partition: rep.Partition}
	for _, r := range rep.Ranges {
		pc := Piece{First: r.First, Last: r.Last, Key: r.Key}
		switch {
		case r.Gap:
			pc.Marker = markerOf(r)
		case r.Unit:
			if len(r.Files) == 0 {
				return Plan{}, fmt.Errorf("%w: %s/%s partition %d: the unit %s lists no objects", ErrArchiveBroken, rep.Stream, rep.Topic, rep.Partition, r.Key)
			}
			pc.Keys = append([]string(nil), r.Files...)
		default:
			pc.Keys = []string{r.Key}
		}
		p.Pieces = append(p.Pieces, pc)
	}
	return p, nil
}

func markerOf(r audit.Range) string {
	switch {
	case r.Hole:
		return "hole"
	case r.Skip:
		return "skip"
	case r.TooLarge:
		return "too large"
	case strings.HasSuffix(r.Key, "."+keys.RenamedExt):
		return "renamed"
	}
	return "gap"
}

// Getter reads an object (*s3store.Uploader).
type Getter interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// Header says whether an object is there, and its size (*s3store.Uploader).
type Header interface {
	Head(ctx context.Context, key string) (size int64, found bool, err error)
}

// Reader reads a piece's records.
type Reader struct {
	Objects Getter
	Layout  archive.Layout
	// ErrorsKey, when set, names a data object's error object
	// (keys.Namer.ErrorsKeyOf, when the configuration writes them): its
	// offsets place the records of an object without offsets, and with
	// IncludeErrors its records are replayed too, in offset order among
	// the object's (poller replay -include-errors).
	ErrorsKey     func(dataKey string) (string, bool)
	IncludeErrors bool
}

// Records reads the records of pc in offset order, each with its offset:
// the record's own, or, for records without one (include_metadata off),
// its place in the object's range among the offsets its error object
// holds, which is known only when the two hold every offset of it.
func (r *Reader) Records(ctx context.Context, pc Piece) ([]archive.Record, error) {
	var out []archive.Record
	sorted := true
	span := pc.Last - pc.First + 1
	for _, key := range pc.Keys {
		body, err := r.Objects.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("replay: read %s: %w", key, err)
		}
		recs, err := archive.Decode(body, r.Layout, span)
		if err != nil {
			return nil, fmt.Errorf("replay: %s: %w", key, err)
		}
		placed := len(recs) == 0 || recs[0].HasOffset
		var errs []archive.Record
		if r.IncludeErrors || (!placed && uint64(len(recs)) < span) {
			if errs, err = r.errorRecords(ctx, key); err != nil {
				return nil, err
			}
		}
		if !placed {
			if err := place(recs, errs, pc, key, len(pc.Keys)); err != nil {
				return nil, err
			}
		}
		out = append(out, recs...)
		if r.IncludeErrors && len(errs) > 0 {
			// The error records have offsets of their own.
			out = append(out, errs...)
			sorted = false
		}
	}
	if !sorted || len(pc.Keys) > 1 {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	}
	for i, rec := range out {
		if rec.Offset < pc.First || rec.Offset > pc.Last || (i > 0 && rec.Offset <= out[i-1].Offset) {
			return nil, fmt.Errorf("replay: %s: a record of offset %d does not fit its range %d..%d in order", pc.Key, rec.Offset, pc.First, pc.Last)
		}
	}
	return out, nil
}

// place gives records without offsets theirs: the range's offsets in
// order, less those the object's error records hold.
func place(recs, errs []archive.Record, pc Piece, key string, keys int) error {
	span := pc.Last - pc.First + 1
	if keys > 1 || uint64(len(recs)+len(errs)) != span {
		return fmt.Errorf("replay: %s holds %d records (and its error object %d) for its %d offsets %d..%d and no offsets (include_metadata = false): "+
			"where each record belongs is not in the archive", key, len(recs), len(errs), span, pc.First, pc.Last)
	}
	taken := make(map[uint64]bool, len(errs))
	for i, e := range errs {
		if e.Offset < pc.First || e.Offset > pc.Last || (i > 0 && e.Offset <= errs[i-1].Offset) {
			return fmt.Errorf("replay: the error object of %s holds offset %d, out of its range %d..%d or of order: where each record belongs is not in the archive",
				key, e.Offset, pc.First, pc.Last)
		}
		taken[e.Offset] = true
	}
	off := pc.First
	for i := range recs {
		for taken[off] {
			off++
		}
		recs[i].Offset, recs[i].HasOffset = off, true
		off++
	}
	return nil
}

// errorRecords reads the records of key's error object, when the reader
// takes them and there is one (an empty one is a void's fence).
func (r *Reader) errorRecords(ctx context.Context, key string) ([]archive.Record, error) {
	if r.ErrorsKey == nil {
		return nil, nil
	}
	ek, ok := r.ErrorsKey(key)
	if !ok {
		return nil, nil
	}
	h, ok := r.Objects.(Header)
	if !ok {
		return nil, errors.New("replay: reading error objects needs a store that can tell whether an object is there")
	}
	size, found, err := h.Head(ctx, ek)
	if err != nil {
		return nil, fmt.Errorf("replay: look for the error object %s: %w", ek, err)
	}
	if !found || size == 0 {
		return nil, nil
	}
	body, err := r.Objects.Get(ctx, ek)
	if err != nil {
		return nil, fmt.Errorf("replay: read %s: %w", ek, err)
	}
	recs, err := archive.DecodeErrors(body)
	if err != nil {
		return nil, fmt.Errorf("replay: %s: %w", ek, err)
	}
	return recs, nil
}

package icetable

import "fmt"

// Item is one object or gap marker of a partition's archive.
type Item struct {
	Key         string
	Generation  uint32
	First, Last uint64
	// Data is set for a data object: it is registered (a Parquet file of
	// no rows, every record rejected, too). Gap markers and objects of no
	// bytes only advance the position.
	Data bool
	// Files are the data files of a unit split by payload values (Key is
	// its manifest): one per value, registered together. Nil for an
	// object, whose one file is Key.
	Files []string
}

// files are the keys of the item's data files.
func (it Item) files() []string {
	if it.Files != nil {
		return it.Files
	}
	return []string{it.Key}
}

// extend returns the items that carry a partition on from pos (has: the
// table records a position for it), in order, and the position they
// reach. Items at or before pos are passed over. The first item kept must
// follow pos exactly: the next offset of its generation, or, when
// complete says items are the partition's whole archive in offset order,
// the first item of a later generation. ok is false when no item follows
// pos (items begin later, or are empty); then the caller lists the
// archive. An item overlapping pos, or a later gap between items, ends the
// chain where it is.
func extend(pos Position, has bool, items []Item, complete bool) (add []Item, next Position, ok bool, err error) {
	next = pos
	started := false
	for i, it := range items {
		at := Position{it.Generation, it.Last}
		if has && !pos.Before(at) {
			continue // registered already
		}
		switch {
		case !started && !has:
			// Never registered: only the whole archive says where it starts.
			if !complete {
				return nil, pos, false, nil
			}
			if i > 0 && items[i-1].Generation == it.Generation {
				return nil, pos, false, fmt.Errorf("icetable: items out of order at %s", it.Key)
			}
		case !started && it.Generation == pos.Generation:
			if it.First > pos.Last+1 {
				return nil, pos, false, nil
			}
			if it.First <= pos.Last {
				return nil, pos, false, fmt.Errorf("icetable: %s (offsets %d..%d) overlaps offsets the table holds up to %d", it.Key, it.First, it.Last, pos.Last)
			}
		case !started: // a later generation
			if !complete {
				return nil, pos, false, nil
			}
			if i > 0 && items[i-1].Generation == it.Generation {
				return nil, pos, false, fmt.Errorf("icetable: items out of order at %s", it.Key)
			}
		case it.Generation == next.Generation && it.First != next.Last+1:
			return add, next, true, nil // a gap the archive does not report: stop before it
		case it.Generation < next.Generation:
			return nil, pos, false, fmt.Errorf("icetable: items out of order at %s", it.Key)
		case it.Generation > next.Generation && !complete:
			return add, next, true, nil
		}
		started = true
		if it.Data {
			add = append(add, it)
		}
		next = at
	}
	return add, next, started, nil
}

package drain

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// errListingOutOfTime is a run that ended while adoption listed S3: an
// error, not a stop, since the partition never starts while it lasts.
var errListingOutOfTime = errors.New("the run ran out of time listing")

// adopt looks in S3 for objects of this partition's generation that follow
// the state's position (or start at offset 0) one after the other, and
// returns the last offset they cover. A new or restored state table finds
// there what earlier runs archived, so nothing is archived twice. It stops
// at the first hole or overlap: what lies beyond is left to the audit.
//
// A time-free template bounds the listing by partition and offset. Under a
// time template it is bounded folder by folder (walkFolders), and falls
// back to the whole listing prefix only where the folders cannot tell
// what follows (issue 21, item 4).
func (c *committer) adopt(ctx context.Context) (end uint64, found bool, err error) {
	next := uint64(0)
	if c.st.HasWritten {
		next = c.st.LastWritten + 1
	}
	c.resume, c.hasResume = 0, false
	a := &adoptList{voided: map[string]bool{}, seen: map[string]bool{},
		part: c.p.info.ID, gen: c.st.Generation, holds: c.names.Matcher()}
	if c.names.TimeFolders() {
		var done bool
		end, found, next, done, err = c.walkFolders(ctx, a, next)
		if err != nil || done {
			c.logAdopted(end, found, a)
			return end, found, err
		}
	}
	if err := c.list(ctx, a, c.names.Listing(next)); err != nil {
		return 0, false, err
	}
	e, f, _, stop := a.chain(next)
	if f {
		end, found = e, true
	}
	if stop.hole {
		c.resume, c.hasResume = stop.resume, true // the first object after a hole
	}
	c.logAdopted(end, found, a)
	return end, found, nil
}

func (c *committer) logAdopted(end uint64, found bool, a *adoptList) {
	if found {
		c.p.log.Info("adopted objects already in S3 beyond the state's position", "last", end, "keys_listed", a.count)
	}
}

// walkFolders follows the objects from next one folder of a time template
// at a time. An object of offsets from o lies in the folder of the server
// time of message o (a data object or a too-large marker) or of the first
// message after o (a gap marker of the offsets before it; a skip marker
// is put at the time of its first offset, or of the next one left). So
// each step reads the message at next and lists that folder from next on.
// done is false when that cannot tell whether an object starts at next:
// the caller lists the whole prefix from there. It can tell when message
// next is still there (or the partition ends before it) and the group has
// not stored next yet: the offsets the group stored may lie under older
// markers placed by other times (skip markers before this rule, renamed
// markers), which only the whole listing finds.
func (c *committer) walkFolders(ctx context.Context, a *adoptList, next uint64) (end uint64, found bool, at uint64, done bool, err error) {
	listed := map[string]bool{}
	for {
		m, err := c.messageAt(ctx, next, "adoption could find the folder of its objects")
		if err != nil {
			return end, found, next, false, err
		}
		if m != nil {
			l := c.names.ListingAt(next, m.Timestamp)
			if !listed[l[0][0]] {
				listed[l[0][0]] = true
				if err := c.list(ctx, a, l); err != nil {
					return end, found, next, false, err
				}
			}
		}
		e, f, after, stop := a.chain(next)
		if f {
			end, found, next = e, true, after
		}
		switch {
		case stop.overlap:
			return end, found, next, true, nil
		case f:
			continue
		}
		// Nothing starts at next in the folders listed.
		unstored := !c.hasStored || next > c.stored
		return end, found, next, unstored && (m == nil || m.Offset == next), nil
	}
}

// list adds what the (prefix, startAfter) listings hold of this
// partition's generation to a, keeping the lease while they run (a whole
// prefix may be long: a topic's history under a time-first template), and
// says so when the run runs out of time in them.
func (c *committer) list(ctx context.Context, a *adoptList, listings [][2]string) error {
	for _, l := range listings {
		prefix, after := l[0], l[1]
		err := c.await(ctx, func(ctx context.Context) error {
			return c.p.r.Objects.ListAfter(ctx, prefix, after, func(key string, _ int64) error {
				a.add(key)
				return nil
			})
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w %q for objects the state does not know (%d keys listed); the next run lists again: give runs more time (run_timeout, the function's timeout), or a path template whose folders do not start with a time field: %w", errListingOutOfTime, prefix, a.count, err)
			}
			return fmt.Errorf("list %q for objects the state does not know: %w", prefix, err)
		}
	}
	return nil
}

// adoptList is what adoption's listings found of one partition's
// generation. Its fields are written by the listing alone: it runs beside
// the lease renewals, which write the committer's state.
type adoptList struct {
	part  uint32
	gen   uint32
	holds func(key string) bool // the prefix may cover other topics' folders
	count int
	// ranges are the objects and markers listed, voided their keys that
	// a void marker voids, seen every key added.
	ranges []adoptRange
	voided map[string]bool
	seen   map[string]bool
	sorted bool
}

type adoptRange struct {
	keys.Name
	key string
}

func (a *adoptList) add(key string) {
	a.count++
	n, ok := keys.ParseName(key)
	if !ok || n.Partition != a.part || n.Generation != a.gen || !a.holds(key) || a.seen[key] {
		return
	}
	a.seen[key] = true
	if n.Void {
		if k, ok := keys.Voided(key); ok {
			a.voided[k] = true
		}
		return
	}
	a.ranges, a.sorted = append(a.ranges, adoptRange{n, key}), false
}

// chainStop says why chain stopped: at a hole before the object that
// starts at resume, at an object that overlaps the chain, or (neither) at
// the end of what was listed.
type chainStop struct {
	hole    bool
	resume  uint64
	overlap bool
}

// chain follows the listed objects one after the other from next: the
// last offset they cover (found), the offset after it, and why it stopped.
func (a *adoptList) chain(next uint64) (end uint64, found bool, after uint64, stop chainStop) {
	if !a.sorted {
		sort.Slice(a.ranges, func(i, j int) bool { return a.ranges[i].First < a.ranges[j].First })
		a.sorted = true
	}
	for _, r := range a.ranges {
		switch {
		case a.voided[r.key] || r.Last < next:
			continue
		case r.First > next:
			return end, found, next, chainStop{hole: true, resume: r.First}
		case r.First != next:
			return end, found, next, chainStop{overlap: true}
		}
		end, found, next = r.Last, true, r.Last+1
	}
	return end, found, next, chainStop{}
}

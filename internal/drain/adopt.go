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

// adoption finds in S3 the objects of the partition's generation that the
// state does not know of: those a new or restored state table lost, which
// earlier runs archived, so that nothing is archived twice.
type adoption struct {
	p     *partition
	l     *lease
	group *groupOffset
}

// adopted is what adopt found: the last offset the objects that follow the
// state's position one after the other cover (found), and, when they stop
// at a hole, the first offset of the first object after it (hasResume).
type adopted struct {
	end       uint64
	found     bool
	resume    uint64
	hasResume bool
}

// adopt looks in S3 for objects of this partition's generation that follow
// the state's position (or start at offset 0) one after the other. It
// stops at the first hole or overlap: what lies beyond is left to the
// audit.
//
// A time-free template bounds the listing by partition and offset. Under a
// time template it is bounded folder by folder (walkFolders), and falls
// back to the whole listing prefix only where the folders cannot tell
// what follows (issue 21, item 4).
func (ad *adoption) adopt(ctx context.Context) (adopted, error) {
	var res adopted
	next := uint64(0)
	if ad.l.st.HasWritten {
		next = ad.l.st.LastWritten + 1
	}
	names := ad.l.names
	a := &adoptList{voided: map[string]bool{}, seen: map[string]bool{},
		part: ad.p.info.ID, gen: ad.l.st.Generation, holds: names.Matcher(), units: names.HasValues()}
	if names.TimeFolders() {
		var done bool
		var err error
		res.end, res.found, next, done, err = ad.walkFolders(ctx, a, next)
		if err != nil || done {
			ad.logAdopted(res, a)
			return res, err
		}
	}
	if err := ad.list(ctx, a, names.Listing(next)); err != nil {
		return adopted{}, err
	}
	e, f, _, stop := a.chain(next)
	if f {
		res.end, res.found = e, true
	}
	if stop.hole {
		res.resume, res.hasResume = stop.resume, true // the first object after a hole
	}
	ad.logAdopted(res, a)
	return res, nil
}

func (ad *adoption) logAdopted(res adopted, a *adoptList) {
	if res.found {
		ad.p.log.Info("adopted objects already in S3 beyond the state's position", "last", res.end, "keys_listed", a.count)
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
func (ad *adoption) walkFolders(ctx context.Context, a *adoptList, next uint64) (end uint64, found bool, at uint64, done bool, err error) {
	listed := map[string]bool{}
	for {
		m, err := ad.p.messageAt(ctx, next, "adoption could find the folder of its objects")
		if err != nil {
			return end, found, next, false, err
		}
		if m != nil {
			l := ad.l.names.ListingAt(next, m.Timestamp)
			if !listed[l[0][0]] {
				listed[l[0][0]] = true
				if err := ad.list(ctx, a, l); err != nil {
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
		return end, found, next, ad.group.notYet(next) && (m == nil || m.Offset == next), nil
	}
}

// list adds what the (prefix, startAfter) listings hold of this
// partition's generation to a, keeping the lease while they run (a whole
// prefix may be long: a topic's history under a time-first template), and
// says so when the run runs out of time in them.
func (ad *adoption) list(ctx context.Context, a *adoptList, listings [][2]string) error {
	for _, l := range listings {
		prefix, after := l[0], l[1]
		err := ad.l.await(ctx, func(ctx context.Context) error {
			return ad.p.r.Objects.ListAfter(ctx, prefix, after, func(key string, _ int64) error {
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
// the lease renewals, which write the state.
type adoptList struct {
	part  uint32
	gen   uint32
	holds func(key string) bool // the prefix may cover other topics' folders
	// units is set under payload fields: a range's object is its unit's
	// manifest (its value objects are not listed for themselves).
	units bool
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
	if !ok || n.Partition != a.part || n.Generation != a.gen || !a.holds(key) || a.seen[key] || !n.Gap && n.Manifest != a.units {
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

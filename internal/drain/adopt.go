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
func (c *committer) adopt(ctx context.Context) (end uint64, found bool, err error) {
	type listed struct {
		keys.Name
		key string
	}
	var ranges []listed
	voided := map[string]bool{}
	next := uint64(0)
	if c.st.HasWritten {
		next = c.st.LastWritten + 1
	}
	holds := c.names.Matcher() // the prefix may cover other topics' folders
	// The listing runs beside the lease renewals, which write c.st.
	part, gen := c.p.info.ID, c.st.Generation
	count := 0
	// The listing keeps the lease (it may be long: a topic's whole history
	// under a time-first template), and a run that runs out of time in it
	// says so instead of stopping as if it had drained (issue 21, item 4).
	for _, l := range c.names.Listing(next) {
		prefix, after := l[0], l[1]
		err = c.await(ctx, func(ctx context.Context) error {
			return c.p.r.Objects.ListAfter(ctx, prefix, after, func(key string, _ int64) error {
				count++
				n, ok := keys.ParseName(key)
				if !ok || n.Partition != part || n.Generation != gen || !holds(key) {
					return nil
				}
				if n.Void {
					if k, ok := keys.Voided(key); ok {
						voided[k] = true
					}
					return nil
				}
				ranges = append(ranges, listed{n, key})
				return nil
			})
		})
		if err != nil {
			if ctx.Err() != nil {
				return 0, false, fmt.Errorf("%w %q for objects the state does not know (%d keys listed); the next run lists again: give runs more time (run_timeout, the function's timeout), or a path template whose folders do not start with a time field: %w", errListingOutOfTime, prefix, count, err)
			}
			return 0, false, fmt.Errorf("list %q for objects the state does not know: %w", prefix, err)
		}
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].First < ranges[j].First })
	c.resume, c.hasResume = 0, false
	for _, r := range ranges {
		switch {
		case voided[r.key] || r.Last < next:
			continue
		case r.First > next:
			c.resume, c.hasResume = r.First, true // the first object after a hole
			return end, found, nil
		case r.First != next:
			return end, found, nil
		}
		end, found, next = r.Last, true, r.Last+1
	}
	if found {
		c.p.log.Info("adopted objects already in S3 beyond the state's position", "last", end)
	}
	return end, found, nil
}

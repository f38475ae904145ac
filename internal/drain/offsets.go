package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// groupOffset is the consumer group's stored offset of the partition: read
// once at the start, stored after each object, never moved back, and only
// while the lease holds.
type groupOffset struct {
	p  *partition
	l  *lease
	ps *PartitionSummary
	// stored is the offset as last read or stored (valid if has).
	stored uint64
	has    bool
}

// read reads the group's offset.
func (g *groupOffset) read(ctx context.Context) error {
	stored, has, err := g.p.conn.StoredOffset(ctx, g.p.topic, g.p.info.ID)
	if err != nil {
		return err
	}
	g.stored, g.has = stored, has
	return nil
}

// store stores last as the group's offset, never moving it back, and only
// while the lease is ours, or would have been had the run's last write
// not given it back: once it lapses, the next owner stores it.
func (g *groupOffset) store(ctx context.Context, last uint64) error {
	if g.has && g.stored >= last {
		return nil
	}
	if expires := g.l.expires(); time.Now().After(expires) {
		return fmt.Errorf("lease expired at %s before offset %d was stored; the partition's next owner stores it", expires.Format(time.RFC3339Nano), last)
	}
	err := g.p.conn.StoreOffset(ctx, g.p.topic, g.p.info.ID, last)
	if errors.Is(err, source.ErrNotOwner) {
		g.p.log.Info("partition moved to another member before its offset was stored; its next owner stores it", "offset", last)
		g.ps.Stopped = stopMoved
		return nil
	}
	if err != nil {
		return err
	}
	g.stored, g.has = last, true
	return nil
}

// inRange reports whether the group has stored an offset the partition
// holds. A re-created topic comes with a new group, which has stored
// nothing in range before the sink archived it: evidence of the live
// incarnation where the messages are gone.
func (g *groupOffset) inRange() bool { return g.has && g.stored <= g.p.info.CurrentOffset }

// notYet reports whether the group has not stored off yet.
func (g *groupOffset) notYet(off uint64) bool { return !g.has || off > g.stored }

// forgetStale forgets an offset beyond the partition's end: the old
// incarnation's, after a re-creation.
func (g *groupOffset) forgetStale() { g.has = g.inRange() }

package drain

import (
	"context"
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// leaseCount is what a partition did with its lease.
type leaseCount struct{ taken, released int }

// drainPartition drains one partition: ownership probe, lease, then the
// committer and the reader side by side, then the lease released.
func (r *Runner) drainPartition(ctx context.Context, conn Conn, j job, readAhead chan struct{}, ps *PartitionSummary) (lc leaseCount, err error) {
	defer func() {
		if err != nil && !errors.Is(err, ErrCrash) {
			if reason := stopped(ctx); reason != "" && !errors.Is(err, errListingOutOfTime) {
				ps.Stopped, err = reason, nil
			} else {
				err = fmt.Errorf("partition %s/%s/%d: %w", j.topic.Stream, j.topic.Topic, j.info.ID, err)
				ps.Error = err.Error()
			}
		}
	}()
	p := &partition{r: r, conn: conn, topic: j.topic, info: j.info, stream: j.stream,
		bp:  batch.Partition{Stream: j.topic.Stream, Topic: j.topic.Topic, ID: j.info.ID},
		log: r.logger().With("stream", j.topic.Stream, "topic", j.topic.Topic, "partition", j.info.ID)}
	if skip, err := p.owned(ctx); skip != "" || err != nil {
		ps.Skipped, ps.Held = skip, skip != "" && p.info.MessagesCount > 0
		return lc, err
	}
	key := state.Key{Group: j.topic.Group, Stream: j.topic.Stream, Topic: j.topic.Topic, Partition: j.info.ID}
	if p.idle(ctx, key, ps) {
		return lc, nil
	}
	sctx, cancel := p.stateCtx(ctx)
	st, err := r.State.Acquire(sctx, key, r.Owner, r.Options.Lease)
	cancel()
	if errors.Is(err, state.ErrLeaseHeld) {
		ps.Skipped, ps.Held = "leased by another run: "+err.Error(), true
		return lc, nil
	}
	if err != nil {
		return lc, err
	}
	lc.taken = 1
	c, err := newCommitter(p, st, ps)
	if err != nil {
		return lc, err
	}
	err = p.run(ctx, c, readAhead, ps)
	if errors.Is(err, ErrCrash) {
		return lc, err
	}
	if errors.Is(err, state.ErrLeaseHeld) { // under the partition's earlier names (carryOver)
		ps.Skipped, ps.Held, err = err.Error(), true, nil
	}
	if rerr := c.release(ctx); rerr != nil {
		p.log.Warn("releasing the partition lease failed; it expires by itself", "lease", r.Options.Lease, "error", rerr.Error())
	} else {
		lc.released = 1
	}
	return lc, err
}

// owned asks whether this member owns the partition. It returns why the
// partition is skipped, if it is.
func (p *partition) owned(ctx context.Context) (string, error) {
	if p.info.MessagesCount == 0 {
		return "partition is empty", nil
	}
	owned, err := p.conn.Owns(ctx, p.topic, p.info.ID)
	if err != nil {
		return "", err
	}
	if !owned {
		return fmt.Sprintf("assigned to another member of consumer group %q", p.topic.Group), nil
	}
	return "", nil
}

// run starts the committer, then the reader from where the committer says,
// and ends both.
func (p *partition) run(ctx context.Context, c *committer, readAhead chan struct{}, ps *PartitionSummary) error {
	next, err := c.start(ctx)
	if errors.Is(err, source.ErrNotOwner) {
		ps.Stopped = stopMoved // the next owner takes it from the state
		return nil
	}
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	rd, err := newReader(p, readAhead)
	if err != nil {
		return err
	}
	objects := make(chan *sealed) // a hand-off: the reader holds at most the object it sealed
	done := make(chan readResult, 1)
	go func() { done <- rd.run(rctx, next, objects) }()
	cerr := c.run(ctx, objects)
	stop()
	res := <-done
	rd.release()
	if errors.Is(res.err, context.Canceled) && ctx.Err() == nil {
		res.err = nil // the committer ended first and stopped the reader
	}
	res.report(ps)
	if cerr != nil {
		return cerr
	}
	return res.err
}

// idle reports whether the partition has nothing to archive, by what the
// state and the group already say, so that it is left without a state
// write (docs/guarantee.md, "Idle partitions"): the state has no
// unfinished object, is of the partition's live incarnation and holds
// every offset the partition has; the group's offset is there too; and
// this process has seen the partition's generation and name markers in
// S3. Anything else — a new or replaced state table, a re-created or
// renamed topic, a group moved, a first run of the process, a read that
// fails — takes the lease, as before.
func (p *partition) idle(ctx context.Context, key state.Key, ps *PartitionSummary) bool {
	if !p.r.LeaveIdle || p.r.Marked == nil {
		return false
	}
	// The group's offset first: a partition with new messages is told
	// apart by it without a state read.
	stored, has, err := p.conn.StoredOffset(ctx, p.topic, p.info.ID)
	if err != nil || !has || stored != p.info.CurrentOffset {
		return false
	}
	sctx, cancel := p.stateCtx(ctx)
	st, found, err := p.r.State.Get(sctx, key)
	cancel()
	if err != nil || !found || st.Intent != nil || !st.HasWritten || st.LastWritten != stored || st.Incarnation != identity(p.info) {
		return false
	}
	if st.Owner != "" && st.LeaseExpires.After(p.r.now()) {
		return false // another run holds it: the lease path says so (Held)
	}
	names := p.r.Options.Names.Partition(p.bp.Stream, p.bp.Topic, p.bp.ID).Generation(st.Generation)
	if !p.r.Marked.has(names.GenerationMarker()) || !p.r.Marked.has(names.NameMarker(p.topic.StreamID, p.topic.TopicID)) {
		return false
	}
	lw := st.LastWritten
	ps.Idle, ps.Committed, ps.Generation = true, &lw, st.Generation
	return true
}

package drain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// committer runs the delivery protocol of one partition (docs/guarantee.md) and is
// the only owner of the partition's state: every state write goes through
// it, in this order.
//
//	start:       incarnation -> recover the unfinished intent -> position
//	each object: intent -> upload (create-only) -> written (+ the next
//	             object's intent, one write) -> store the group's offset
//	end:         release the lease
//
// The objects come from the reader in offset order; an object is marked
// written only when the next one is known, so that in steady state one
// conditional write both closes an object and opens the next. The next
// object's upload begins beside that write, held back until it is durable
// (early.go).
type committer struct {
	p     *partition
	st    state.State // the one copy of the partition's state
	ps    *PartitionSummary
	names keys.PartitionNamer // of st.Generation
	// resume is the first offset of the first object adopt found after a
	// hole (hasResume), for groupAhead.
	resume    uint64
	hasResume bool
	enc       *batch.Encoder // re-renders ranges (streamed objects, recovery)
	zbufs     chan []byte    // compression buffers kept for the uploads that may overlap (two)
	// renderedTS is the server time of the last message render read.
	renderedTS uint64
	// stored is the group's offset as last read or stored (valid if hasStored).
	stored    uint64
	hasStored bool
	// lastWrite is when a state write last extended the lease; renewFail
	// when a renewal last failed (zero if the last one succeeded). Leases
	// run on the wall clock, as the state store's do, whatever Runner.Now says.
	lastWrite, renewFail time.Time
}

func newCommitter(p *partition, st state.State, ps *PartitionSummary) (*committer, error) {
	enc, err := p.encoder()
	if err != nil {
		return nil, err
	}
	names := p.r.Options.Names.Partition(p.bp.Stream, p.bp.Topic, p.bp.ID).Generation(st.Generation)
	return &committer{p: p, st: st, ps: ps, names: names, enc: enc, lastWrite: time.Now(), zbufs: make(chan []byte, 2)}, nil
}

// start brings the state up to date and returns the first offset to read.
func (c *committer) start(ctx context.Context) (uint64, error) {
	stored, has, err := c.p.conn.StoredOffset(ctx, c.p.topic, c.p.info.ID)
	if err != nil {
		return 0, err
	}
	c.stored, c.hasStored = stored, has
	if err := c.incarnation(ctx); err != nil {
		return 0, err
	}
	if err := c.markNames(ctx); err != nil {
		return 0, err
	}
	if c.st.Intent != nil {
		if err := c.recover(ctx); err != nil {
			return 0, err
		}
	}
	return c.position(ctx)
}

// incarnation compares the partition's identity with the one the state
// recorded. A partition deleted and re-created under the same name starts
// again at offset 0: it becomes a new generation whose objects are named
// apart. On 0.8 and 0.9 the identity is the creation time, which a server
// may also report anew for the same partition (0.8.0 re-stamps it on
// restart): then the message the state last recorded is still there, and
// the new time is adopted. On 0.10 it is the partition's incarnation,
// which changes exactly when the partition is re-created.
func (c *committer) incarnation(ctx context.Context) error {
	cur := identity(c.p.info)
	switch {
	case cur == 0:
		return nil
	case c.st.Incarnation == 0 && c.st.Generation == 0 && !c.st.HasWritten && c.st.Intent == nil:
		// A fresh item: S3 may hold generations from before it (issue
		// 21, item 2).
		return c.startGeneration(ctx, cur)
	case cur == c.st.Incarnation:
		return c.markGeneration(ctx)
	}
	recreated := false
	switch {
	case exactIdentity(cur) && exactIdentity(c.st.Incarnation):
		recreated = true
	default:
		// A state that recorded no identity (a row from before identities
		// were kept, an old backup) is checked too: what it archived may
		// be an earlier incarnation's (issue 21, item 7).
		var err error
		if recreated, err = c.recreated(ctx); err != nil {
			return err
		}
		if !recreated && !c.st.HasWritten && c.st.Intent == nil {
			if recreated, err = c.markerDisowns(ctx, cur); err != nil {
				return err
			}
		}
	}
	if !recreated {
		if err := c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
			return c.p.r.State.Adopt(ctx, st, cur, c.p.r.Options.Lease)
		}); err != nil {
			return err
		}
		return c.markGeneration(ctx)
	}
	if c.st.Generation == ^uint32(0) {
		return fmt.Errorf("partition re-created: generation limit %d reached", c.st.Generation)
	}
	// A state restored from an old backup may be behind S3's generations.
	gen, err := c.liveGeneration(ctx, cur, c.st.Generation+1)
	if err != nil {
		return err
	}
	c.p.log.Warn("partition was deleted and re-created in Iggy: archiving the new one from offset 0 as a new generation",
		"recorded_incarnation", describeIdentity(c.st.Incarnation), "incarnation", describeIdentity(cur), "generation", gen)
	if in := c.st.Intent; in != nil {
		if err := c.retire(ctx, *in); err != nil {
			return err
		}
	}
	if err := c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.Reset(ctx, st, cur, gen, c.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	c.names = c.names.Generation(c.st.Generation)
	c.ps.Recreated, c.ps.Generation = true, c.st.Generation
	c.hasStored = c.hasStored && c.stored <= c.p.info.CurrentOffset // else an offset of the old incarnation
	return c.markGeneration(ctx)
}

// exactBase offsets a recorded identity that is Iggy 0.10's incarnation
// number rather than a creation time: creation times in microseconds stay
// below 2^52 until the year 2112, and the sum stays below 2^53, which
// every DynamoDB client and emulator carries exactly.
const exactBase = 1 << 52

// identity is what the state records as the partition's incarnation: the
// server's own incarnation number when it reports one (0.10) that fits,
// offset by exactBase, else the creation time.
func identity(p source.PartitionInfo) uint64 {
	if p.Incarnation != 0 && p.Incarnation < exactBase {
		return exactBase + p.Incarnation
	}
	return p.CreatedAt
}

func exactIdentity(id uint64) bool { return id >= exactBase }

func describeIdentity(id uint64) string {
	if exactIdentity(id) {
		return fmt.Sprintf("incarnation %d", id-exactBase)
	}
	return fmt.Sprintf("created at %d µs", id)
}

// recreated looks for the message the state last recorded (the unfinished
// object's first, else the last one written): a partition that no longer
// reaches that offset, or holds another message there, was re-created. When
// that message is gone (retention) the group tells: a re-created topic
// comes with a new group, which has stored nothing in range yet.
func (c *committer) recreated(ctx context.Context) (bool, error) {
	off, ts := c.st.LastWritten, c.st.LastTimestamp
	if in := c.st.Intent; in != nil {
		off, ts = in.First, in.FirstTimestamp
	} else if !c.st.HasWritten {
		return false, nil // nothing archived yet: nothing to tell apart
	}
	m, err := c.messageAt(ctx, off, "its incarnation could be checked")
	switch {
	case err != nil:
		return false, err
	case m == nil:
		return true, nil // the partition ends before it
	}
	if same, known := recordedMessage(m, off, ts); known {
		return !same, nil
	}
	// The state's record cannot tell (no server time recorded, as after
	// adopted objects or a skip marker; or retention took its message):
	// the generation marker's message may.
	live, known, err := c.markerTells(ctx)
	if err != nil || known {
		return !live, err
	}
	return !c.hasStored || c.stored > c.p.info.CurrentOffset, nil
}

// recordedMessage tells from m, the first message at or after off, whether
// the partition is the incarnation a record of (off, ts) was made in: ts
// is the server time of message off, or, for a gap marker ending at off,
// of the first message after it. The same time at or after off proves it
// (messages of one send batch share a time; a re-created partition's are
// later); another message at off disproves it. Otherwise (retention took
// the recorded message, or ts is 0) known is false.
func recordedMessage(m *batch.Message, off, ts uint64) (same, known bool) {
	switch {
	case ts == 0 || m.Offset < off:
		return false, false
	case m.Timestamp == ts:
		return true, true
	case m.Offset == off:
		return false, true
	}
	return false, false
}

// messageAt reads the message at off, or the first after it (retention);
// nil when the partition ends before off. A not-owned answer proves
// nothing: the assignment it was read against may predate a rebalance
// that handed the partition back. So ownership is asked, and an owned
// partition polled again; only a partition whose last offset is below off
// may still answer that way (0.8 answers a poll past the end of partition
// 0 holding one message like a not-owned one). ErrNotOwner names what
// could not be done.
func (c *committer) messageAt(ctx context.Context, off uint64, what string) (*batch.Message, error) {
	for attempt := 0; ; attempt++ {
		msgs, owned, err := c.p.conn.Poll(ctx, c.p.topic, c.p.info.ID, off, 1, nil)
		switch {
		case err != nil:
			return nil, err
		case owned && len(msgs) == 0:
			return nil, nil
		case owned:
			return &msgs[0], nil
		}
		mine, err := c.p.conn.Owns(ctx, c.p.topic, c.p.info.ID)
		switch {
		case err != nil:
			return nil, err
		case !mine:
			return nil, fmt.Errorf("%w: it moved before %s", source.ErrNotOwner, what)
		case attempt == 0:
			continue
		case c.p.info.CurrentOffset < off:
			return nil, nil
		}
		return nil, fmt.Errorf("%w: polls of offset %d answered as not owned, though the group assigns the partition to this member, before %s", source.ErrNotOwner, off, what)
	}
}

// recover finishes the object a previous run recorded but did not complete:
// its bytes are a pure function of the range and the configuration, so it
// is re-rendered and written again under its key. When it cannot be (Iggy
// deleted part of the range, or the format changed), it is settled.
func (c *committer) recover(ctx context.Context) error {
	in := *c.st.Intent
	c.ps.Recovered = true
	c.p.log.Info("recovering an unfinished object", "first", in.First, "last", in.Last, "key", in.ObjectKey)
	c.abortUploads(ctx, in.ObjectKey)
	s := &sealed{first: in.First, last: in.Last, gap: isGapKey(in.ObjectKey), done: func() {}}
	if !s.gap && !strings.HasSuffix(in.ObjectKey, "."+c.p.r.Options.Names.Ext()) {
		return c.settle(ctx, in, nil)
	}
	w, err := c.upload(ctx, s)
	var miss *missingError
	if errors.As(err, &miss) {
		return c.settle(ctx, in, miss)
	}
	if err != nil {
		return fmt.Errorf("recover %s: %w", in.ObjectKey, err)
	}
	s.lastTS = c.renderedTS
	return c.complete(ctx, s, w, nil, false)
}

// settle ends an intent that cannot be re-rendered. If the object reached S3
// before, only the bookkeeping is missing. If not, its key is fenced off
// (void) so that a stalled writer can never still put it there, and the
// range is read again; what Iggy deleted meanwhile (miss) is a gap.
func (c *committer) settle(ctx context.Context, in state.Intent, miss *missingError) error {
	size, exists, err := c.void(ctx, in)
	if err != nil {
		return err
	}
	if exists {
		w := Written{Key: in.ObjectKey, First: in.First, Last: in.Last, Messages: in.Last - in.First + 1, Bytes: uint64(size), Existed: true}
		return c.complete(ctx, &sealed{first: in.First, last: in.Last, done: func() {}}, w, nil, false)
	}
	if err := c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.Abandon(ctx, st, c.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	if miss == nil {
		return nil
	}
	// Everything from the intent's start to the first message left is gone:
	// retention removes the oldest messages first; a hole never held any.
	cause, err := c.p.gapCause(ctx, miss.Next-1)
	if err != nil {
		return err
	}
	gap := &sealed{first: in.First, last: miss.Next - 1, ts: miss.Timestamp, lastTS: miss.Timestamp, gap: true, cause: cause, done: func() {}}
	if err := c.setIntent(ctx, gap); err != nil {
		return err
	}
	w, err := c.upload(ctx, gap)
	if err != nil {
		return err
	}
	return c.complete(ctx, gap, w, nil, false)
}

// groupAhead handles a group offset beyond the state's position (or a
// state with nothing written). Either the state is behind (a new or
// restored table): the objects up to the group's offset are in S3, and are
// adopted; or the group was moved forward past what the sink archived (an
// operator, another consumer sharing the group, or a group the sink was
// pointed at that had consumed before): the offsets no object holds are
// passed over with a skip marker, so that the archive says where archiving
// began and why the rest is missing, and the audit accepts it (issue 21,
// items 10 and 11).
func (c *committer) groupAhead(ctx context.Context) (uint64, error) {
	for {
		end, found, err := c.adopt(ctx)
		if err != nil {
			return 0, err
		}
		pos := uint64(0)
		if c.st.HasWritten {
			pos = c.st.LastWritten + 1
		}
		if found {
			if err := c.skipTo(ctx, end); err != nil {
				return 0, err
			}
			pos = end + 1
		}
		if pos > c.stored {
			return pos, c.storeOffset(ctx, pos-1)
		}
		// pos..stored lies in no object up to the next one S3 holds, if
		// any (objects a lifecycle rule expired leave such holes): the
		// marker ends before it, and adoption goes on from there. It is
		// put at the time of its first offset, where adoption under a
		// time template looks for it (walkFolders).
		last := c.stored
		if c.hasResume && c.resume > pos && c.resume-1 < last {
			last = c.resume - 1
		}
		skip := &sealed{first: pos, last: last, ts: c.timestampNear(ctx, pos), gap: true, cause: CauseSkipped, done: func() {}}
		if err := c.setIntent(ctx, skip); err != nil {
			return 0, err
		}
		w, err := c.upload(ctx, skip)
		if err != nil {
			return 0, err
		}
		if err := c.complete(ctx, skip, w, nil, false); err != nil {
			return 0, err
		}
		if last == c.stored && !c.hasResume {
			return c.stored + 1, nil
		}
	}
}

// timestampNear is the server time of the message at off (or the next
// one), for a marker's folder under a time template; now when there is
// none to read.
func (c *committer) timestampNear(ctx context.Context, off uint64) uint64 {
	msgs, _, err := c.p.conn.Poll(ctx, c.p.topic, c.p.info.ID, off, 1, nil)
	if err == nil && len(msgs) > 0 {
		return msgs[0].Timestamp
	}
	return uint64(time.Now().UnixMicro())
}

// retire ends the old incarnation's unfinished object before a reset: if
// it never reached S3, its key is fenced and its range reported as a gap of
// the old generation (its messages went with the partition). An unfinished
// gap marker is written again under its own key instead, as recover does:
// it is a pure function of its range, so whichever write lands first is the
// marker, and no second one reports the same offsets. The reset then drops
// the intent in the same write that moves the incarnation on, so a run
// that dies in between repeats all of this.
func (c *committer) retire(ctx context.Context, in state.Intent) error {
	if isGapKey(in.ObjectKey) {
		_, err := c.upload(ctx, &sealed{first: in.First, last: in.Last, gap: true, done: func() {}})
		return err
	}
	c.abortUploads(ctx, in.ObjectKey)
	_, exists, err := c.void(ctx, in)
	if err != nil || exists {
		return err
	}
	_, err = c.putGapMarker(ctx, c.names.Gap(in.First, in.Last, 0), in.First, in.Last, CauseRecreated)
	return err
}

// abortUploads aborts what a dead run left of a multipart upload of key:
// its parts stay in the store (and are billed) until someone does (issue
// 21, item 13). Best effort, with a warning: a bucket lifecycle rule for
// incomplete uploads is the backstop (`poller check` says whether there is
// one).
func (c *committer) abortUploads(ctx context.Context, key string) {
	if isGapKey(key) {
		return // markers are single PUTs
	}
	n, err := c.p.r.Objects.AbortUploads(ctx, key)
	switch {
	case err != nil:
		c.p.log.Warn("could not abort the multipart uploads a dead run left for the object; a bucket lifecycle rule for incomplete uploads removes them", "key", key, "error", err)
	case n > 0:
		c.p.log.Info("aborted the multipart uploads a dead run left for the object", "key", key, "uploads", n)
	}
}

// position returns the first offset to read: after the later of the
// group's stored offset and the state's position. When the state is behind
// (a new or restored state table), the objects already in S3 beyond it are
// adopted, so nothing is archived twice; the group's offset never moves back.
func (c *committer) position(ctx context.Context) (uint64, error) {
	lw, has := c.st.LastWritten, c.st.HasWritten
	switch {
	case has && (!c.hasStored || c.stored < lw):
		return lw + 1, c.storeOffset(ctx, lw)
	case has && c.stored == lw:
		return lw + 1, nil
	case c.hasStored:
		return c.groupAhead(ctx)
	}
	end, found, err := c.adopt(ctx)
	if err != nil || !found {
		if c.st.HasWritten {
			return c.st.LastWritten + 1, err
		}
		return 0, err
	}
	if err := c.skipTo(ctx, end); err != nil {
		return 0, err
	}
	return end + 1, c.storeOffset(ctx, end)
}

// run writes the objects the reader hands over, in order, until the reader
// is done, the run is out of time, or the partition moves.
func (c *committer) run(ctx context.Context, objects <-chan *sealed) error {
	cur, err := c.receive(ctx, objects)
	for cur != nil && err == nil {
		cur, err = c.step(ctx, cur, objects)
	}
	cur.giveBack(err) // received as the lease was lost: a step hands on nothing with an error
	return err
}

// step writes cur and returns the object after it, nil when there is none.
//
// Whatever the step holds and does not hand on is given back on its way
// out, whichever way that is, by the one deferred release: cur (upload
// gives it back; a step that ends before cur's upload does not get
// there), and the next object, its early upload abandoned, unless it is
// the step's result. An object read ahead holds the run's one read-ahead
// slot: kept by a step that failed, or by a partition that moved, it
// would leave every other partition without read-ahead to the end of the
// run.
func (c *committer) step(ctx context.Context, cur *sealed, objects <-chan *sealed) (handed *sealed, err error) {
	var next *sealed // the object after cur, once received
	var e *early     // next's early upload, until openEarly hands it to next
	why := errStepEnded
	defer func() {
		if err != nil {
			why = err
		}
		if handed == nil || err != nil {
			c.drop(next, e, why)
			handed = nil
		}
		cur.giveBack(why)
	}()
	if c.st.Intent == nil {
		if c.p.outOfTime(ctx) {
			c.leave(cur, stopDeadline)
			return nil, nil
		}
		// The run's first object goes early too, held until the write
		// of its intent is durable.
		first := c.startEarly(ctx, cur)
		if err := c.setIntent(ctx, cur); err != nil {
			first.abandon(err)
			return nil, err
		}
		if err := c.openEarly(cur, first); err != nil {
			return nil, err
		}
	}
	// The next object's upload begins as soon as the reader seals it, even
	// while cur's is still going: held until complete has recorded its
	// intent.
	var received bool
	var rerr error
	next, e, received, rerr = c.receiveBeside(ctx, cur, objects)
	if rerr != nil && cur.early != nil {
		cur.early.cancel(rerr) // as a lease lost during the upload ends it
	}
	w, err := c.upload(ctx, cur)
	if err == nil && !received {
		next, rerr = c.receive(ctx, objects)
	}
	if err != nil {
		if rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	if next != nil && c.p.outOfTime(ctx) {
		e.abandon(errors.New(stopDeadline))
		c.leave(next, stopDeadline)
		next, e = nil, nil
	}
	if next != nil && rerr == nil && e == nil {
		e = c.startEarly(ctx, next)
	}
	// Without a next object this is the partition's last state write of
	// the run: it gives the lease back too.
	if err := c.complete(ctx, cur, w, next, next == nil); err != nil {
		return nil, errors.Join(err, rerr)
	}
	if c.ps.Stopped != "" {
		// The partition moved (its offset store was refused): next is
		// not this run's to write.
		why = errors.New(c.ps.Stopped)
		return nil, rerr
	}
	if err := c.openEarly(next, e); err != nil {
		return nil, err
	}
	return next, rerr
}

// errStepEnded is why a step abandons what it does not hand on when it
// ends without an error.
var errStepEnded = errors.New("the object's step ended")

// receiveBeside waits for the reader's next object while cur's early
// upload runs, and begins the next one's upload, held at its gate, as soon
// as it comes: the two PUTs overlap instead of following each other.
// received is false when cur's upload ended first (or cur did not go
// early, or the run is out of time): the caller receives after the upload,
// as before.
func (c *committer) receiveBeside(ctx context.Context, cur *sealed, objects <-chan *sealed) (next *sealed, e *early, received bool, err error) {
	if cur.early == nil || c.p.outOfTime(ctx) {
		return nil, nil, false, nil
	}
	uploaded := cur.early.done
	err = c.await(ctx, func(ctx context.Context) error {
		select {
		case next = <-objects: // nil: the reader is done
			received = true
			return nil
		case <-uploaded:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	if err != nil {
		// The lease could not be kept: the upload ends with the step, and
		// an object received as the renewal failed goes back.
		next.giveBack(err)
		return nil, nil, true, err
	}
	if next != nil && !c.p.outOfTime(ctx) {
		e = c.startEarly(ctx, next)
	}
	return next, e, received, nil
}

// drop ends an object received but never to be written by this run: its
// early upload (e, or the one handed to it) is abandoned, nothing stored,
// its accumulator given back, and its records stay in Iggy. Dropping an
// object again does nothing.
func (c *committer) drop(s *sealed, e *early, why error) {
	e.abandon(why)
	s.giveBack(why)
}

// openEarly lets s's early upload e land, now that its intent is durable,
// and hands it to s; nothing when s did not go early.
func (c *committer) openEarly(s *sealed, e *early) error {
	if e == nil {
		return nil
	}
	// Where s's upload would have begun, had it waited for the write.
	if err := c.p.hook(StepMidUpload); err != nil {
		e.abandon(err)
		return err
	}
	e.open()
	s.early = e
	return nil
}

// leave drops an object the run will not write: its messages stay in Iggy
// for a later run.
func (c *committer) leave(s *sealed, why string) {
	c.ps.Stopped = why
	if n := s.messages(); n > 0 {
		c.ps.Pending += n
		t := time.UnixMicro(int64(s.ts)).UTC()
		c.ps.PendingSince = &t
	}
	s.giveBack(errors.New(why))
}

// setIntent records the object s is about to become.
func (c *committer) setIntent(ctx context.Context, s *sealed) error {
	return c.write(ctx, StepIntent, func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.SetIntent(ctx, st, c.intentFor(s), c.p.r.Options.Lease)
	})
}

// complete marks cur written (recording next's intent in the same write
// when there is a next, or giving the lease back when the run writes
// nothing more to the partition's state: last) and then stores the
// group's offset.
func (c *committer) complete(ctx context.Context, cur *sealed, w Written, next *sealed, last bool) error {
	if err := c.p.hook(StepUploaded); err != nil {
		return err
	}
	d := state.Done{Messages: w.Messages, Bytes: w.Bytes, LastTimestamp: cur.lastTS}
	if cur.gap {
		d = state.Done{GapMessages: cur.last - cur.first + 1, LastTimestamp: cur.lastTS}
	}
	if next != nil {
		in := c.intentFor(next)
		d.Next = &in
	}
	d.Release = last
	if err := c.write(ctx, StepStateWritten, func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.Complete(ctx, st, d, c.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	c.ps.wrote(w)
	for _, h := range c.p.r.hooks.objects {
		h.OnObject(c.p.bp, w)
	}
	if next != nil {
		if err := c.p.hook(StepIntent); err != nil {
			return err
		}
	}
	if err := c.p.hook(StepBeforeStore); err != nil {
		return err
	}
	if err := c.storeOffset(ctx, cur.last); err != nil {
		return err
	}
	return c.p.hook(StepStored)
}

// storeOffset stores last as the group's offset, never moving it back, and
// only while the lease is ours, or would have been had the run's last
// write not given it back: once it lapses, the next owner stores it.
func (c *committer) storeOffset(ctx context.Context, last uint64) error {
	if c.hasStored && c.stored >= last {
		return nil
	}
	if expires := c.leaseExpires(); time.Now().After(expires) {
		return fmt.Errorf("lease expired at %s before offset %d was stored; the partition's next owner stores it", expires.Format(time.RFC3339Nano), last)
	}
	err := c.p.conn.StoreOffset(ctx, c.p.topic, c.p.info.ID, last)
	if errors.Is(err, source.ErrNotOwner) {
		c.p.log.Info("partition moved to another member before its offset was stored; its next owner stores it", "offset", last)
		c.ps.Stopped = stopMoved
		return nil
	}
	if err != nil {
		return err
	}
	c.stored, c.hasStored = last, true
	return nil
}

// leaseExpires is when the lease lapses; for a lease the run's last write
// gave back, when it would have lapsed. Another run may take a lease given
// back at once, and store the group's offset before this run does: this
// run's store then moves it back to the end of the run's last object until
// the next run, which stores the state's position again (position). No
// offset is archived twice or missed by that: the state, not the group,
// says where archiving goes on.
func (c *committer) leaseExpires() time.Time {
	if c.st.Owner == "" {
		return c.lastWrite.Add(c.p.r.Options.Lease)
	}
	return c.st.LeaseExpires
}

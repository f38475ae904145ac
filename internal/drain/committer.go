package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// committer runs the delivery protocol of one partition (docs/guarantee.md)
// as stages that each own their part of it, composed here in this order:
//
//	start:       history (incarnation, generations, renames) -> recover
//	             the unfinished intent -> position (adoption, the group)
//	each object: intent -> upload (objectWriter, create-only) -> written
//	             (+ the next object's intent, one write) -> store the
//	             group's offset (groupOffset)
//	end:         release the lease
//
// Every state write goes through the lease, which holds the one copy of
// the partition's state. The objects come from the reader in offset order;
// an object is marked written only when the next one is known, so that in
// steady state one conditional write both closes an object and opens the
// next. The next object's upload begins beside that write, held back until
// it is durable (early.go).
type committer struct {
	p        *partition
	ps       *PartitionSummary
	lease    *lease
	group    *groupOffset
	history  *history
	adoption *adoption
	writer   *objectWriter
	marks    *markers
}

func newCommitter(p *partition, st state.State, ps *PartitionSummary) (*committer, error) {
	enc, err := p.encoder()
	if err != nil {
		return nil, err
	}
	l := newLease(p, st)
	group := &groupOffset{p: p, l: l, ps: ps}
	marks := &markers{p: p}
	writer := &objectWriter{p: p, l: l, ps: ps, marks: marks, enc: enc, zbufs: make(chan []byte, 2),
		format: p.r.Options.Records.Format, comp: p.r.Options.Compression}
	rn := &renames{p: p, l: l, group: group, ps: ps, marks: marks, writer: writer}
	return &committer{p: p, ps: ps, lease: l, group: group, marks: marks, writer: writer,
		history:  &history{p: p, l: l, group: group, ps: ps, marks: marks, writer: writer, renames: rn},
		adoption: &adoption{p: p, l: l, group: group},
	}, nil
}

// start brings the state up to date and returns the first offset to read.
func (c *committer) start(ctx context.Context) (uint64, error) {
	if err := c.group.read(ctx); err != nil {
		return 0, err
	}
	if err := c.history.incarnation(ctx); err != nil {
		return 0, err
	}
	if err := c.history.renames.mark(ctx); err != nil {
		return 0, err
	}
	if c.lease.st.Intent != nil {
		if err := c.recover(ctx); err != nil {
			return 0, err
		}
	}
	return c.position(ctx)
}

// recover finishes the object a previous run recorded but did not complete:
// its bytes are a pure function of the range and the configuration, so it
// is re-rendered and written again under its key. When it cannot be (Iggy
// deleted part of the range, or the format changed), it is settled.
func (c *committer) recover(ctx context.Context) error {
	in := *c.lease.st.Intent
	c.ps.Recovered = true
	c.p.log.Info("recovering an unfinished object", "first", in.First, "last", in.Last, "key", in.ObjectKey)
	c.marks.abortUploads(ctx, in.ObjectKey)
	s := &sealed{first: in.First, last: in.Last, gap: isGapKey(in.ObjectKey), done: func() {}}
	if err := c.unitUnchanged(in); err != nil {
		return err
	}
	if n, _ := keys.ParseName(in.ObjectKey); !s.gap && (n.Ext != c.p.r.Options.Names.Ext() && !n.Manifest || n.Manifest != c.lease.names.HasValues()) {
		// Rendered in another format, or split by payload values when
		// this configuration does not split (or the other way round). A
		// unit of another format is finished in its own (writeUnit).
		return c.settle(ctx, in, nil)
	}
	w, err := c.writer.upload(ctx, s)
	var miss *missingError
	if errors.As(err, &miss) {
		return c.settle(ctx, in, miss)
	}
	if err != nil {
		return fmt.Errorf("recover %s: %w", in.ObjectKey, err)
	}
	s.lastTS = c.writer.renderedTS
	return c.complete(ctx, s, w, nil, false)
}

// unitUnchanged refuses to recover a unit split by payload values that was
// begun under another configuration: its value objects may be partly
// written, in folders or a format this configuration would not give them,
// so reading its offsets again under this one could archive them twice.
func (c *committer) unitUnchanged(in state.Intent) error {
	n, ok := keys.ParseName(in.ObjectKey)
	if !ok || !n.Manifest {
		return nil
	}
	names := c.p.r.Options.Names
	if names.HasValues() && n.Fingerprint == names.Fingerprint() {
		return nil
	}
	return fmt.Errorf("recover %s: %w: run once more with the settings that began it, then change them", in.ObjectKey, errUnitChanged)
}

// errUnitChanged marks an unfinished unit of other settings.
var errUnitChanged = errors.New("an unfinished unit split by payload fields was begun under other settings (path_template, default_partition_name, transforms or max_json_depth), and its value objects may be partly written in folders these settings would not give them; reading its offsets again now could archive them twice")

// settle ends an intent that cannot be re-rendered. If the object reached S3
// before, only the bookkeeping is missing. If not, its key is fenced off
// (void) so that a stalled writer can never still put it there, and the
// range is read again; what Iggy deleted meanwhile (miss) is a gap.
func (c *committer) settle(ctx context.Context, in state.Intent, miss *missingError) error {
	size, exists, err := c.marks.void(ctx, in)
	if err != nil {
		return err
	}
	if exists {
		w := Written{Key: in.ObjectKey, First: in.First, Last: in.Last, Messages: in.Last - in.First + 1, Bytes: uint64(size), Existed: true}
		return c.complete(ctx, &sealed{first: in.First, last: in.Last, done: func() {}}, w, nil, false)
	}
	if err := c.lease.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
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
	return c.writeMarker(ctx, &sealed{first: in.First, last: miss.Next - 1, ts: miss.Timestamp, lastTS: miss.Timestamp, gap: true, cause: cause, done: func() {}})
}

// writeMarker records, uploads and completes the gap marker gap: the
// protocol of an object, for one that holds no records.
func (c *committer) writeMarker(ctx context.Context, gap *sealed) error {
	if err := c.setIntent(ctx, gap); err != nil {
		return err
	}
	w, err := c.writer.upload(ctx, gap)
	if err != nil {
		return err
	}
	return c.complete(ctx, gap, w, nil, false)
}

// position returns the first offset to read: after the later of the
// group's stored offset and the state's position. When the state is behind
// (a new or restored state table), the objects already in S3 beyond it are
// adopted, so nothing is archived twice; the group's offset never moves back.
func (c *committer) position(ctx context.Context) (uint64, error) {
	lw, has := c.lease.st.LastWritten, c.lease.st.HasWritten
	g := c.group
	switch {
	case has && (!g.has || g.stored < lw):
		return lw + 1, g.store(ctx, lw)
	case has && g.stored == lw:
		return lw + 1, nil
	case g.has:
		return c.groupAhead(ctx)
	}
	ad, err := c.adoption.adopt(ctx)
	if err != nil || !ad.found {
		if c.lease.st.HasWritten {
			return c.lease.st.LastWritten + 1, err
		}
		return 0, err
	}
	if err := c.skipTo(ctx, ad.end); err != nil {
		return 0, err
	}
	return ad.end + 1, g.store(ctx, ad.end)
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
	g := c.group
	for {
		ad, err := c.adoption.adopt(ctx)
		if err != nil {
			return 0, err
		}
		pos := uint64(0)
		if c.lease.st.HasWritten {
			pos = c.lease.st.LastWritten + 1
		}
		if ad.found {
			if err := c.skipTo(ctx, ad.end); err != nil {
				return 0, err
			}
			pos = ad.end + 1
		}
		if pos > g.stored {
			return pos, g.store(ctx, pos-1)
		}
		// pos..stored lies in no object up to the next one S3 holds, if
		// any (objects a lifecycle rule expired leave such holes): the
		// marker ends before it, and adoption goes on from there. It is
		// put at the time of its first offset, where adoption under a
		// time template looks for it (walkFolders).
		last := g.stored
		if ad.hasResume && ad.resume > pos && ad.resume-1 < last {
			last = ad.resume - 1
		}
		skip := &sealed{first: pos, last: last, ts: c.p.timestampNear(ctx, pos), gap: true, cause: CauseSkipped, done: func() {}}
		if err := c.writeMarker(ctx, skip); err != nil {
			return 0, err
		}
		if last == g.stored && !ad.hasResume {
			return g.stored + 1, nil
		}
	}
}

// skipTo moves the state's position to last without an object: the group
// or S3 shows that everything up to last is archived.
func (c *committer) skipTo(ctx context.Context, last uint64) error {
	if c.lease.st.HasWritten && c.lease.st.LastWritten >= last {
		return nil
	}
	return c.lease.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.Skip(ctx, st, last, 0, c.p.r.Options.Lease)
	})
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
	if c.lease.st.Intent == nil {
		if c.p.outOfTime(ctx) {
			c.leave(cur, stopDeadline)
			return nil, nil
		}
		if err := c.begin(ctx, cur); err != nil {
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
	w, err := c.writer.upload(ctx, cur)
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
		e = c.writer.startEarly(ctx, next)
	}
	return c.finish(ctx, cur, w, next, e, rerr, &why)
}

// begin records the intent of the run's first object, whose upload goes
// early too, held until the write of its intent is durable.
func (c *committer) begin(ctx context.Context, cur *sealed) error {
	first := c.writer.startEarly(ctx, cur)
	if err := c.setIntent(ctx, cur); err != nil {
		first.abandon(err)
		return err
	}
	return c.openEarly(cur, first)
}

// finish marks cur written, with next's intent, and hands next on, its
// early upload e let land; rerr is what receiving next ended with, and why
// what step's release gives back with.
func (c *committer) finish(ctx context.Context, cur *sealed, w Written, next *sealed, e *early, rerr error, why *error) (*sealed, error) {
	// Without a next object this is the partition's last state write of
	// the run: it gives the lease back too.
	if err := c.complete(ctx, cur, w, next, next == nil); err != nil {
		return nil, errors.Join(err, rerr)
	}
	if c.ps.Stopped != "" {
		// The partition moved (its offset store was refused): next is
		// not this run's to write.
		*why = errors.New(c.ps.Stopped)
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

// receive waits for the reader's next object, keeping the lease; nil when
// the reader is done.
func (c *committer) receive(ctx context.Context, objects <-chan *sealed) (*sealed, error) {
	var s *sealed
	err := c.lease.await(ctx, func(ctx context.Context) error {
		select {
		case s = <-objects:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	return s, err
}

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
	err = c.lease.await(ctx, func(ctx context.Context) error {
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
		e = c.writer.startEarly(ctx, next)
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
	return c.lease.write(ctx, StepIntent, func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.SetIntent(ctx, st, c.writer.intentFor(s), c.p.r.Options.Lease)
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
		in := c.writer.intentFor(next)
		d.Next = &in
	}
	d.Release = last
	if err := c.lease.write(ctx, StepStateWritten, func(ctx context.Context, st state.State) (state.State, error) {
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
	if err := c.group.store(ctx, cur.last); err != nil {
		return err
	}
	return c.p.hook(StepStored)
}

// release gives the lease back, bounded by CleanupTimeout however the run's
// context ended.
func (c *committer) release(ctx context.Context) error {
	if c.lease.st.HasWritten {
		lw := c.lease.st.LastWritten
		c.ps.Committed = &lw
	}
	c.ps.Generation = c.lease.st.Generation
	return c.lease.release(ctx)
}

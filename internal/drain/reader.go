package drain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// sealed is one object the reader finished, or a gap it found, handed to
// the committer in offset order.
type sealed struct {
	first, last uint64
	// ts is the server time of the first message (of the message after the
	// gap, for a gap): it places the object in the path template. lastTS is
	// the last message's (0 for a gap, or not known yet).
	ts, lastTS uint64
	// acc holds the records (or, spilled, only their count); nil for a gap.
	acc records
	gap bool
	// cause says why a gap's offsets are missing (a Cause constant): it
	// decides the marker's key.
	cause string
	// done gives the accumulator back once the object is uploaded; call it
	// through giveBack, which calls it once.
	done func()
	// early is the object's upload, begun beside the state write that
	// recorded its intent (see committer.step); nil when not begun.
	early *early
}

// giveBack ends what s still holds, once however many ways out call it:
// an early upload nothing waited for is abandoned (nothing stored), then
// the accumulator goes back to the reader; a read-ahead one frees the
// run's read-ahead slot for every partition.
func (s *sealed) giveBack(why error) {
	if s == nil {
		return
	}
	s.early.abandon(why)
	s.early = nil
	if done := s.done; done != nil {
		s.done = nil
		done()
	}
}

func (s *sealed) messages() uint64 {
	if s.acc == nil {
		return 0
	}
	return uint64(s.acc.Len())
}

// readResult is what the reader left behind.
type readResult struct {
	pending        uint64
	pendingSince   uint64 // server time of the first pending message
	invalid        uint64
	malformed      uint64
	malformedAt    *uint64
	pollBytesMax   uint64
	stoppedBecause string
	err            error
}

func (res readResult) report(ps *PartitionSummary) {
	ps.Pending += res.pending
	if res.pending > 0 && ps.PendingSince == nil {
		t := time.UnixMicro(int64(res.pendingSince)).UTC()
		ps.PendingSince = &t
	}
	ps.InvalidPayloads += res.invalid // the committer counted the objects it recovered
	ps.MalformedHeaders, ps.MalformedHeadersAt = res.malformed, res.malformedAt
	ps.PollBytesMax = max(ps.PollBytesMax, res.pollBytesMax)
	if ps.Stopped == "" {
		ps.Stopped = res.stoppedBecause
	}
}

// reader polls one partition from a start offset, accumulates records and
// seals objects by the rotation rules; it owns no state but its position.
type reader struct {
	p   *partition
	enc *batch.Encoder
	// free holds the partition's own accumulator while no object uses it;
	// readAhead is the run's one extra slot (see Runner.fanOut).
	free      chan records
	readAhead chan struct{}
	res       readResult
	sizer     pollSizer
	// tooLargeAt is the offset of a message a reply too large to keep
	// announced alone (hasTooLarge): it stands in the messages as one
	// without payload, and becomes a too-large marker.
	tooLargeAt  uint64
	hasTooLarge bool
}

func newReader(p *partition, readAhead chan struct{}) (*reader, error) {
	enc, err := p.encoder()
	if err != nil {
		return nil, err
	}
	rd := &reader{p: p, enc: enc, free: make(chan records, 1), readAhead: readAhead,
		sizer: newPollSizer(p.r.Options.MaxPollBytes, p.stream.BatchLength)}
	rd.free <- rd.newAccumulator()
	return rd, nil
}

func (rd *reader) newAccumulator() records { return rd.p.newRecords(rd.enc) }

// take returns an empty accumulator: the partition's own when it is free,
// else the run's read-ahead slot when that is free, else it waits for its own.
func (rd *reader) take(ctx context.Context) (records, func(), error) {
	own := func(a records) (records, func(), error) {
		return a, func() { a.Reset(); rd.free <- a }, nil
	}
	select {
	case a := <-rd.free:
		return own(a)
	default:
	}
	select {
	case rd.readAhead <- struct{}{}:
		a := rd.newAccumulator()
		return a, func() { a.Release(); <-rd.readAhead }, nil
	default:
	}
	select {
	case a := <-rd.free:
		return own(a)
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	}
}

// release gives the buffers of the partition's own accumulator back for
// the partitions drained after it, once both the reader and the committer
// are done with it (an accumulator an object still holds is left to the
// garbage collector): without it every partition drained allocates an
// object-sized buffer, and the run pays for zeroing and faulting it in.
func (rd *reader) release() {
	select {
	case a := <-rd.free:
		a.Release()
	default:
	}
}

// run reads from next until the partition is drained, the run is out of
// time, the partition moves, or ctx ends; it closes out when it returns.
func (rd *reader) run(ctx context.Context, next uint64, out chan<- *sealed) readResult {
	defer close(out)
	acc, done, err := rd.take(ctx)
	if err == nil {
		err = rd.loop(ctx, next, &acc, &done, out)
	}
	if acc != nil && acc.Len() > 0 {
		rd.res.pending, rd.res.pendingSince = uint64(acc.Len()), acc.FirstTimestamp()
	}
	if done != nil {
		// The records left unsealed stay in Iggy: the accumulator goes back
		// (a read-ahead one frees the run's slot for another partition).
		done()
	}
	rd.res.invalid, rd.res.malformed = rd.enc.InvalidPayloads(), rd.enc.MalformedHeaders()
	if errors.Is(err, errStop) {
		err = nil
	}
	rd.res.err = err
	return rd.res
}

// errStop ends the loop without an error; res.stoppedBecause says why.
var errStop = errors.New("reader stopped")

func (rd *reader) loop(ctx context.Context, next uint64, acc *records, done *func(), out chan<- *sealed) error {
	var msgs []batch.Message
	var replies []byte // lent to every poll: add copies what it keeps
	for {
		if rd.p.outOfTime(ctx) {
			rd.res.stoppedBecause = stopDeadline
			return errStop
		}
		var owned bool
		var err error
		msgs, owned, err = rd.p.conn.PollInto(ctx, rd.p.topic, rd.p.info.ID, next, rd.sizer.count, msgs[:0], &replies)
		if tl := asTooLarge(err); tl != nil {
			if rd.sizer.shrink(tl) {
				continue
			}
			if !tl.Peeked || tl.Count != 1 {
				return fmt.Errorf("a poll of one message at offset %d was answered with more than max_poll_bytes (%d) can hold: raise max_poll_bytes: %w", next, rd.p.r.Options.MaxPollBytes, err)
			}
			// One message alone is too large: it is reported, not read.
			msgs = append(msgs[:0], batch.Message{Offset: tl.Offset, Timestamp: tl.Timestamp})
			rd.tooLargeAt, rd.hasTooLarge, owned, err = tl.Offset, true, true, nil
			rd.p.log.Warn("a message is larger than max_poll_bytes: reporting it by its offset", "offset", tl.Offset, "bytes", tl.MessageSize, "max_poll_bytes", rd.p.r.Options.MaxPollBytes)
		}
		if errors.Is(err, source.ErrNotOwner) {
			rd.res.stoppedBecause = stopMoved
			return errStop
		}
		if err != nil {
			return err
		}
		if err := rd.p.hook(StepPolled); err != nil {
			return err
		}
		if len(msgs) == 0 {
			if (*acc).Len() > 0 && (*acc).Due(rd.p.r.now()) {
				return rd.seal(ctx, acc, done, out, false)
			}
			if !owned && (*acc).Len() > 0 {
				rd.res.stoppedBecause = stopMoved
			}
			return nil
		}
		if rd.hasTooLarge {
			rd.sizer.count = 1 // the next message may be as large
		} else {
			rd.res.pollBytesMax = max(rd.res.pollBytesMax, rd.sizer.observe(msgs))
		}
		if next, err = rd.add(ctx, msgs, next, acc, done, out); err != nil {
			if errors.Is(err, source.ErrNotOwner) {
				rd.res.stoppedBecause = stopMoved
				return errStop
			}
			return err
		}
	}
}

// add puts polled messages into objects, sealing each full one and
// reporting a gap wherever offsets jump: Iggy deleted them (retention), or,
// when the jump is between two messages of one reply, never wrote them (a
// hole: 0.10's offsets can skip numbers after a server recovery).
func (rd *reader) add(ctx context.Context, msgs []batch.Message, next uint64, acc *records, done *func(), out chan<- *sealed) (uint64, error) {
	for i := range msgs {
		m := &msgs[i]
		if m.Offset < next {
			continue
		}
		if m.Offset > next {
			if err := rd.gapBefore(ctx, msgs, i, next, acc, done, out); err != nil {
				return next, err
			}
			next = m.Offset
		}
		if rd.sizer.tooLarge(m) || (rd.hasTooLarge && m.Offset == rd.tooLargeAt) {
			// Sealed before it, so that no object holds it: a re-render of
			// an object never meets it.
			if err := rd.seal(ctx, acc, done, out, true); err != nil {
				return next, err
			}
			big := &sealed{first: m.Offset, last: m.Offset, ts: m.Timestamp, lastTS: m.Timestamp, gap: true, cause: CauseTooLarge, done: func() {}}
			if err := rd.send(ctx, out, big); err != nil {
				return next, err
			}
			rd.hasTooLarge = false
			next = m.Offset + 1
			continue
		}
		added, err := (*acc).Add(m)
		if err != nil {
			// invalid_payload = "fail": keep what came before, then stop here.
			return next, errors.Join(err, rd.seal(ctx, acc, done, out, false))
		}
		if !added {
			if err := rd.seal(ctx, acc, done, out, true); err != nil {
				return next, err
			}
			if added, err = (*acc).Add(m); err != nil || !added {
				return next, errors.Join(err, fmt.Errorf("internal error: an empty object refused offset %d", m.Offset))
			}
		}
		rd.noteHeaders(m)
		next = m.Offset + 1
		if (*acc).Full() {
			if err := rd.seal(ctx, acc, done, out, true); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}

// gapBefore seals what was accumulated and hands on the marker of the
// offsets from next to msgs[i], which the reply passed over: a hole the
// server left, or retention's gap.
func (rd *reader) gapBefore(ctx context.Context, msgs []batch.Message, i int, next uint64, acc *records, done *func(), out chan<- *sealed) error {
	if err := rd.seal(ctx, acc, done, out, true); err != nil {
		return err
	}
	m := &msgs[i]
	// lastTS is the message after the gap: what tells this incarnation by
	// once the gap's offsets are gone (recorded).
	gap := &sealed{first: next, last: m.Offset - 1, ts: m.Timestamp, lastTS: m.Timestamp, gap: true, cause: CauseIggyHole, done: func() {}}
	if i == 0 || msgs[i-1].Offset != next-1 { // retention cannot delete between two messages of a reply
		var err error
		if gap.cause, err = rd.p.gapCause(ctx, gap.last); err != nil {
			return err
		}
	}
	return rd.send(ctx, out, gap)
}

// seal hands the accumulated object to the committer and, when more is to
// be read, takes an empty accumulator.
func (rd *reader) seal(ctx context.Context, acc *records, done *func(), out chan<- *sealed, more bool) error {
	a := *acc
	if a.Len() == 0 {
		return nil
	}
	s := &sealed{first: a.First(), last: a.Last(), ts: a.FirstTimestamp(), lastTS: a.LastTimestamp(), acc: a, done: *done}
	if err := rd.send(ctx, out, s); err != nil {
		return err // the object stays with the reader: its messages are pending
	}
	*acc, *done = nil, nil
	if !more {
		return nil
	}
	var err error
	*acc, *done, err = rd.take(ctx)
	return err
}

func (rd *reader) send(ctx context.Context, out chan<- *sealed, s *sealed) error {
	select {
	case out <- s:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// noteHeaders remembers the first offset whose user headers were malformed.
func (rd *reader) noteHeaders(m *batch.Message) {
	if rd.res.malformedAt == nil && rd.enc.MalformedHeaders() > 0 {
		off := m.Offset
		rd.res.malformedAt = &off
	}
}

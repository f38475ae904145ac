package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/archive"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Target is the topic a replay produces into (source.Conn on a resolved
// topic: Topic adapts it).
type Target interface {
	// Next is the offset partition p's next message will get (its
	// message count), and the partition's identity
	// (source.PartitionInfo.Identity): another one when it was deleted and
	// re-created.
	Next(ctx context.Context, p uint32) (next, identity uint64, err error)
	// Read reads up to count messages from offset, as a plain consumer.
	Read(ctx context.Context, p uint32, offset uint64, count uint32) ([]batch.Message, error)
	// Send appends msgs as one batch; known says the server told the
	// offset the first landed at.
	Send(ctx context.Context, p uint32, msgs []source.Outgoing) (first uint64, known bool, err error)
}

// Store is the part of the state table a replay writes (*state.Dynamo,
// *state.Memory).
type Store interface {
	Acquire(ctx context.Context, key state.Key, owner string, ttl time.Duration) (state.State, error)
	SetIntent(ctx context.Context, s state.State, in state.Intent, ttl time.Duration) (state.State, error)
	Complete(ctx context.Context, s state.State, d state.Done, ttl time.Duration) (state.State, error)
	Abandon(ctx context.Context, s state.State, ttl time.Duration) (state.State, error)
	Skip(ctx context.Context, s state.State, lastWritten uint64, gapMessages uint64, ttl time.Duration) (state.State, error)
	Adopt(ctx context.Context, s state.State, incarnation uint64, ttl time.Duration) (state.State, error)
	Reset(ctx context.Context, s state.State, incarnation uint64, generation uint32, ttl time.Duration) (state.State, error)
	Release(ctx context.Context, s state.State) error
}

// Errors a partition's Result carries; test them with errors.Is.
var (
	// ErrForeign: the target partition holds a message that is not this
	// archive's where the replay's next one belongs.
	ErrForeign = errors.New("another producer writes into the target partition")
	// ErrTargetChanged: the target partition holds fewer messages than the
	// replay put into it (deleted and re-created since).
	ErrTargetChanged = errors.New("the target partition holds fewer messages than the replay produced into it")
	// ErrNotEmpty: a first replay into a target partition that already
	// holds messages of its own (Options.Append replays after them).
	ErrNotEmpty = errors.New("the target partition already holds messages that are not this archive's")
)

// Options are a replay's choices. Zero values are the defaults.
type Options struct {
	Source Source
	// TargetStream and TargetTopic name the target in the state's keys.
	TargetStream, TargetTopic string
	// Owner identifies this run's leases; unique per run (each Partition
	// call holds its lease as Owner/p<partition>-<call>).
	Owner string
	// LeaseTTL is how long a lease lasts past each write (default 60 s). A
	// send must finish within it: its deadline is a third of it before
	// the lease ends.
	LeaseTTL time.Duration
	// FromOffset and ToOffset bound the archived offsets replayed (inclusive).
	FromOffset, ToOffset *uint64
	// Since and Until bound the message time (server time; Until exclusive).
	Since, Until time.Time
	// Append lets a first replay produce after messages the target
	// partition already holds (its offsets then are not the archive's).
	Append bool
	// ChunkMessages and ChunkBytes bound one produced batch (default
	// DefaultChunkMessages, DefaultChunkBytes of payloads and headers).
	ChunkMessages int
	ChunkBytes    int
	// StopBy, when set, is when to stop producing: no chunk starts after
	// it (a Lambda invocation's time; the next run goes on).
	StopBy time.Time
	// Progress, when set, is called after every chunk.
	Progress func(Progress)
	Log      *slog.Logger
}

// Progress is how far a partition's replay has come.
type Progress struct {
	Partition       uint32
	Messages, Bytes uint64
	// At is the last archived offset produced; Last the plan's last.
	At, Last uint64
}

// Result is what a replay did to one partition.
type Result struct {
	Partition uint32 `json:"partition"`
	// Replayed messages (with their payload and header bytes) this run
	// produced.
	Replayed uint64 `json:"replayed"`
	Bytes    uint64 `json:"bytes"`
	// TargetFirst..TargetLast are the target offsets this run produced.
	TargetFirst *uint64 `json:"target_first,omitempty"`
	TargetLast  *uint64 `json:"target_last,omitempty"`
	// Aligned: every message this run produced landed at its archived
	// offset (a restore from offset 0 with no gaps into a new topic).
	Aligned bool `json:"aligned"`
	// Position is the last archived offset the target holds (when Done).
	Position *uint64 `json:"position,omitempty"`
	// Markers are the archive's gaps in the selection, as "first..last kind".
	Markers []string `json:"gaps,omitempty"`
	// Missing are offsets the archive has no object or marker for.
	Missing []string `json:"missing,omitempty"`
	// Filtered counts records left out by -since/-until.
	Filtered uint64 `json:"filtered,omitempty"`
	// Absent counts offsets of the objects read whose records are in no
	// object: an error object's (invalid_payload = "error_object"), left
	// out unless the Reader takes them (-include-errors).
	Absent uint64 `json:"absent,omitempty"`
	// Stopped: StopBy came before the partition was done (not an error;
	// the next run goes on).
	Stopped bool `json:"stopped,omitempty"`
	// Resumed says how the run went on from an earlier one.
	Resumed string `json:"resumed,omitempty"`
	// Err is why the partition stopped; nil when it is replayed in full.
	Err error `json:"-"`
}

// Replayer replays archived partitions into a target.
type Replayer struct {
	Reader *Reader
	Target Target
	State  Store
	Opts   Options

	calls atomic.Uint64
}

func (o *Options) ttl() time.Duration {
	if o.LeaseTTL <= 0 {
		return 60 * time.Second
	}
	return o.LeaseTTL
}

// Key is the state key of target partition p's replay from o.Source.
func (o *Options) Key(p uint32) state.Key {
	return state.Key{Group: "replay:" + o.Source.Stream + "/" + o.Source.Topic + "/" + strconv.FormatUint(uint64(o.Source.Generation), 10),
		Stream: o.TargetStream, Topic: o.TargetTopic, Partition: p}
}

// intentKey records the target offset a chunk starts at.
func intentKey(target uint64) string { return "target-offset:" + strconv.FormatUint(target, 10) }

func targetOf(in *state.Intent) (uint64, error) {
	v, ok := strings.CutPrefix(in.ObjectKey, "target-offset:")
	t, err := strconv.ParseUint(v, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("the state's intent %q is not a replay's", in.ObjectKey)
	}
	return t, nil
}

// run is one partition's replay in progress.
type run struct {
	*Replayer
	plan Plan
	st   state.State
	res  Result
	// pos is the last archived offset the target holds, when hasPos (the
	// replay, this run or an earlier one, has produced into the target).
	pos    uint64
	hasPos bool
	next   uint64 // the target's next offset
	// unsettled: a send failed and may still land; the lease is left to
	// expire rather than given back.
	unsettled bool
}

// Partition replays one plan into target partition plan.Partition.
func (r *Replayer) Partition(ctx context.Context, plan Plan) Result {
	ru := &run{Replayer: r, plan: plan, res: Result{Partition: plan.Partition, Aligned: true}}
	ru.describeGaps()
	err := ru.replay(ctx)
	if ru.res.Replayed == 0 {
		ru.res.Aligned = false
	}
	if ru.hasPos {
		p := ru.pos
		ru.res.Position = &p
	}
	ru.res.Err = err
	return ru.res
}

func (ru *run) replay(ctx context.Context) error {
	o := &ru.Opts
	key := o.Key(ru.plan.Partition)
	// Each call's lease under an owner of its own: one run's two calls on
	// one partition must fence each other as two runs do.
	owner := fmt.Sprintf("%s/p%d-%d", o.Owner, ru.plan.Partition, ru.calls.Add(1))
	st, err := ru.State.Acquire(ctx, key, owner, o.ttl())
	if errors.Is(err, state.ErrLeaseHeld) {
		return fmt.Errorf("replay lease %s: %w (another replay works on this partition, or an earlier one's send failed and its lease is left to expire: run again after lease_duration, %s)", key, err, o.ttl())
	}
	if err != nil {
		return fmt.Errorf("replay lease %s: %w", key, err)
	}
	ru.st = st
	defer func() {
		// A lease given back at once lets the next run go on without
		// waiting for it to expire. Not after a send that failed: its
		// bytes may still reach the server, and only the lease's last
		// third (the send's deadline ends there) keeps the next run from
		// finding the chunk not landed and sending it again.
		if ru.unsettled {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = ru.State.Release(rctx, ru.st)
	}()
	// HasWritten, not st.Messages > 0: a Reset (a re-created target)
	// keeps the counts and clears HasWritten.
	ru.pos, ru.hasPos = st.LastWritten, st.HasWritten
	if err := ru.reconcile(ctx); err != nil {
		return err
	}
	if o.Progress != nil { // where it starts, for what is left
		o.Progress(Progress{Partition: ru.plan.Partition, At: ru.pos, Last: ru.planLast()})
	}
	if err := ru.produce(ctx); !errors.Is(err, errStop) {
		return err
	}
	return nil
}

// reconcile settles what an earlier run left, from the state and from
// the target itself: afterwards ru.pos is the last archived offset the
// target holds and ru.next the target's next offset.
func (ru *run) reconcile(ctx context.Context) error {
	p := ru.plan.Partition
	next, id, err := ru.Target.Next(ctx, p)
	if err != nil {
		return err
	}
	ru.next = next
	if err := ru.identify(ctx, id); err != nil {
		return err
	}
	if in := ru.st.Intent; in != nil {
		return ru.settle(ctx, in)
	}
	if next == 0 {
		if ru.hasPos {
			return fmt.Errorf("%w: it is empty, and the replay's state says it holds the archive up to offset %d (removed by retention?); "+
				"replay into a new topic, or delete the state item %s to replay into this one again", ErrTargetChanged, ru.pos, ru.st.Key.ID())
		}
		return nil
	}
	tail, err := ru.Target.Read(ctx, p, next-1, 1)
	if err != nil {
		return err
	}
	if len(tail) != 1 || tail[0].Offset != next-1 {
		return fmt.Errorf("replay: reading the target's last message (offset %d) gave %d messages", next-1, len(tail))
	}
	at, ours := ru.Opts.Source.Archived(p, tail[0].ID)
	switch {
	case ours && (!ru.hasPos || at > ru.pos):
		// The target holds more than the state says: an earlier replay's
		// state was lost, or its completion never written.
		ru.res.Resumed = fmt.Sprintf("the target already holds the archive up to offset %d (its message at target offset %d); going on after it", at, next-1)
		return ru.adopt(ctx, at)
	case ours && at < ru.pos:
		return fmt.Errorf("%w: its last message is archived offset %d, and the replay's state says it holds the archive up to offset %d (truncated, or the state of another target?); "+
			"replay into a new topic, or delete the state item %s to go on after offset %d", ErrTargetChanged, at, ru.pos, ru.st.Key.ID(), at)
	case ours:
		ru.res.Resumed = fmt.Sprintf("going on after archived offset %d", ru.pos)
		return nil
	case ru.hasPos:
		return fmt.Errorf("%w: its last message (offset %d) is not this archive's; the replay's last is at or before it", ErrForeign, next-1)
	case !ru.Opts.Append:
		return fmt.Errorf("%w (%d of them): the replay would not keep the archive's offsets; pass -append to replay after them", ErrNotEmpty, next)
	}
	return nil
}

// identify records the target partition's identity, and starts again from
// nothing when it changed: the partition was deleted and re-created, so
// none of what the state says was produced is in it.
func (ru *run) identify(ctx context.Context, id uint64) error {
	switch {
	case id == 0 || id == ru.st.Incarnation:
		return nil
	case ru.st.Incarnation == 0:
		st, err := ru.State.Adopt(ctx, ru.st, id, ru.Opts.ttl())
		ru.st = st
		return err
	}
	// Another identity, yet the target holds this archive's messages: the
	// same partition whose identity is reported anew (a server restart, a
	// client that reads it otherwise), or the same names on another server
	// replayed into before. Its own messages say where it stands.
	ours, err := ru.holdsOurs(ctx)
	if err != nil {
		return err
	}
	if ours {
		st, err := ru.State.Adopt(ctx, ru.st, id, ru.Opts.ttl())
		ru.st = st
		return err
	}
	st, err := ru.State.Reset(ctx, ru.st, id, ru.st.Generation+1, ru.Opts.ttl())
	if err != nil {
		return err
	}
	ru.st, ru.pos, ru.hasPos = st, 0, false
	ru.res.Resumed = "the target partition was re-created since the last replay into it; replaying from the start"
	return nil
}

// holdsOurs reports whether the target partition's first or last message
// is this archive's.
func (ru *run) holdsOurs(ctx context.Context) (bool, error) {
	if ru.next == 0 {
		return false, nil
	}
	p := ru.plan.Partition
	for _, at := range []uint64{0, ru.next - 1} {
		msgs, err := ru.Target.Read(ctx, p, at, 1)
		if err != nil {
			return false, err
		}
		if len(msgs) > 0 {
			if _, ok := ru.Opts.Source.Archived(p, msgs[0].ID); ok {
				return true, nil
			}
		}
	}
	return false, nil
}

// settle decides an unfinished chunk by what the target holds from its
// start offset on: the chunk's messages (all, some or none), nothing else.
func (ru *run) settle(ctx context.Context, in *state.Intent) error {
	p := ru.plan.Partition
	start, err := targetOf(in)
	if err != nil {
		return err
	}
	if ru.next < start {
		return fmt.Errorf("%w: it ends before offset %d, where the replay's unfinished chunk starts", ErrTargetChanged, start)
	}
	landed, has := uint64(0), false
	for at := start; at < ru.next; {
		msgs, err := ru.Target.Read(ctx, p, at, 1000)
		if err != nil {
			return err
		}
		if len(msgs) == 0 {
			return fmt.Errorf("replay: the target answered no messages at offset %d of its %d", at, ru.next)
		}
		for _, m := range msgs {
			off, ours := ru.Opts.Source.Archived(p, m.ID)
			if !ours || off < in.First || off > in.Last || (has && off <= landed) || m.Offset != at {
				return fmt.Errorf("%w: its message at offset %d is not the next of the replay's unfinished chunk (archived offsets %d..%d from target offset %d)",
					ErrForeign, m.Offset, in.First, in.Last, start)
			}
			landed, has = off, true
			at++
		}
	}
	st, err := ru.State.Abandon(ctx, ru.st, ru.Opts.ttl())
	if err != nil {
		return err
	}
	ru.st = st
	if !has {
		ru.res.Resumed = fmt.Sprintf("the unfinished chunk of archived offsets %d..%d had not landed; producing it again", in.First, in.Last)
		return nil
	}
	ru.res.Resumed = fmt.Sprintf("the unfinished chunk of archived offsets %d..%d had landed up to offset %d; going on after it", in.First, in.Last, landed)
	return ru.adopt(ctx, landed)
}

// adopt records at as the position the target holds.
func (ru *run) adopt(ctx context.Context, at uint64) error {
	st, err := ru.State.Skip(ctx, ru.st, at, 0, ru.Opts.ttl())
	if err != nil {
		return err
	}
	ru.st, ru.pos, ru.hasPos = st, at, true
	return nil
}

// selected reports whether rec is in the selection, and whether no later
// record can be (past ToOffset).
func (ru *run) selected(rec *archive.Record) (in, past bool, err error) {
	o := &ru.Opts
	if o.ToOffset != nil && rec.Offset > *o.ToOffset {
		return false, true, nil
	}
	if o.FromOffset != nil && rec.Offset < *o.FromOffset {
		return false, false, nil
	}
	if !o.Since.IsZero() || !o.Until.IsZero() {
		if rec.Timestamp == 0 {
			return false, false, fmt.Errorf("replay: the archive's records hold no time (include_metadata = false): -since and -until cannot select them")
		}
		t := time.UnixMicro(int64(rec.Timestamp))
		if (!o.Since.IsZero() && t.Before(o.Since)) || (!o.Until.IsZero() && !t.Before(o.Until)) {
			ru.res.Filtered++
			return false, false, nil
		}
	}
	return true, false, nil
}

// produce replays the plan's records after ru.pos in chunks. The next
// piece is read while the current one is sent (one piece ahead, so memory
// stays at two pieces and a chunk).
func (ru *run) produce(ctx context.Context) error {
	o := &ru.Opts
	maxMsgs, maxBytes := o.ChunkMessages, o.ChunkBytes
	if maxMsgs <= 0 {
		maxMsgs = DefaultChunkMessages
	}
	if maxBytes <= 0 {
		maxBytes = DefaultChunkBytes
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pieces := ru.read(ctx)
	var ch chunk
	for rp := range pieces {
		if rp.err != nil {
			return rp.err
		}
		recs, pc := rp.recs, rp.pc
		ru.res.Absent += pc.Last - pc.First + 1 - uint64(len(recs))
		for i := range recs {
			rec := &recs[i]
			if ru.hasPos && rec.Offset <= ru.pos {
				continue
			}
			in, past, err := ru.selected(rec)
			if err != nil {
				return err
			}
			if past {
				return ru.flush(ctx, &ch)
			}
			if !in {
				continue
			}
			if ch.full(rec, maxMsgs, maxBytes) {
				if err := ru.flush(ctx, &ch); err != nil {
					return err
				}
			}
			ch.add(o.Source.MessageID(ru.plan.Partition, rec.Offset), rec)
		}
	}
	return ru.flush(ctx, &ch)
}

// The default bounds of one produced batch.
const (
	DefaultChunkMessages = 5000
	DefaultChunkBytes    = 4 << 20
)

// readPiece is a piece's records, or why they could not be read.
type readPiece struct {
	pc   Piece
	recs []archive.Record
	err  error
}

// read reads the pieces after ru.pos in the selection, in order, one ahead
// of the sender; it stops at the first error, or when ctx ends.
func (ru *run) read(ctx context.Context) <-chan readPiece {
	o := &ru.Opts
	out := make(chan readPiece, 1)
	pos, hasPos := ru.pos, ru.hasPos
	go func() {
		defer close(out)
		for _, pc := range ru.plan.Pieces {
			if pc.Marker != "" || (hasPos && pc.Last <= pos) || (o.FromOffset != nil && pc.Last < *o.FromOffset) {
				continue
			}
			if o.ToOffset != nil && pc.First > *o.ToOffset {
				return
			}
			recs, err := ru.Reader.Records(ctx, pc)
			select {
			case out <- readPiece{pc: pc, recs: recs, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// chunk is the next batch to produce.
type chunk struct {
	msgs    []source.Outgoing
	offsets []uint64
	bytes   int
	// lo and hi are the origin times' span.
	lo, hi uint64
}

// maxOriginSpan keeps a batch's origin times within what one can say (0.9
// and 0.10: 2^32 µs), with room.
const maxOriginSpan = 1 << 31

func (c *chunk) full(rec *archive.Record, maxMsgs, maxBytes int) bool {
	if len(c.msgs) == 0 {
		return false
	}
	lo, hi := min(c.lo, rec.Timestamp), max(c.hi, rec.Timestamp)
	return len(c.msgs) >= maxMsgs || c.bytes+len(rec.Payload)+len(rec.Headers) > maxBytes || hi-lo > maxOriginSpan
}

func (c *chunk) add(id [16]byte, rec *archive.Record) {
	if len(c.msgs) == 0 {
		c.lo, c.hi = rec.Timestamp, rec.Timestamp
	}
	c.lo, c.hi = min(c.lo, rec.Timestamp), max(c.hi, rec.Timestamp)
	c.msgs = append(c.msgs, source.Outgoing{ID: id, OriginTimestamp: rec.Timestamp, Headers: rec.Headers, Payload: rec.Payload})
	c.offsets = append(c.offsets, rec.Offset)
	c.bytes += len(rec.Payload) + len(rec.Headers)
}

// errStop ends produce when StopBy has come.
var errStop = errors.New("replay: stopped in time")

// flush produces the chunk: intent, send, check, complete. Past StopBy it
// produces nothing and returns errStop.
func (ru *run) flush(ctx context.Context, ch *chunk) error {
	if len(ch.msgs) == 0 {
		return nil
	}
	if !ru.Opts.StopBy.IsZero() && !time.Now().Before(ru.Opts.StopBy) {
		ru.res.Stopped = true
		return errStop
	}
	defer func() { *ch = chunk{msgs: ch.msgs[:0], offsets: ch.offsets[:0]} }()
	o, p := &ru.Opts, ru.plan.Partition
	first, last := ch.offsets[0], ch.offsets[len(ch.offsets)-1]
	if ru.hasPos {
		first = ru.pos + 1 // the chunk covers what lies between too
	}
	target := ru.next
	st, err := ru.State.SetIntent(ctx, ru.st, state.Intent{First: first, Last: last, ObjectKey: intentKey(target)}, o.ttl())
	if err != nil {
		return err
	}
	ru.st = st
	sendCtx, cancel := context.WithDeadline(ctx, st.LeaseExpires.Add(-o.ttl()/3))
	at, known, err := ru.Target.Send(sendCtx, p, ch.msgs)
	cancel()
	if errors.Is(err, source.ErrDuplicate) {
		known, err = false, nil // the server has it already: the read below tells where
	}
	if err != nil {
		ru.unsettled = !errors.Is(err, source.ErrNotSent)
		return fmt.Errorf("%w (the chunk of archived offsets %d..%d may have landed: the next run settles it once this run's lease expired)", err, first, last)
	}
	if !known {
		got, err := ru.Target.Read(ctx, p, target, 1)
		if err != nil {
			return err
		}
		if len(got) == 1 && got[0].ID == ch.msgs[0].ID {
			at = target
		} else {
			at = target + 1 // anything but target: reported below
		}
	}
	if at != target {
		return fmt.Errorf("%w: the chunk of archived offsets %d..%d was to land at target offset %d and landed elsewhere", ErrForeign, first, last, target)
	}
	n := uint64(len(ch.msgs))
	st, err = ru.State.Complete(ctx, ru.st, state.Done{Messages: n, Bytes: uint64(ch.bytes), LastTimestamp: ch.msgs[n-1].OriginTimestamp}, o.ttl())
	if err != nil {
		return err
	}
	ru.st, ru.pos, ru.hasPos = st, last, true
	ru.next = target + n
	for i, off := range ch.offsets {
		if off != target+uint64(i) {
			ru.res.Aligned = false
		}
	}
	if ru.res.TargetFirst == nil {
		t := target
		ru.res.TargetFirst = &t
	}
	tl := target + n - 1
	ru.res.TargetLast = &tl
	ru.res.Replayed += n
	ru.res.Bytes += uint64(ch.bytes)
	if o.Progress != nil {
		o.Progress(Progress{Partition: p, Messages: ru.res.Replayed, Bytes: ru.res.Bytes, At: last, Last: ru.planLast()})
	}
	return nil
}

func (ru *run) planLast() uint64 {
	if n := len(ru.plan.Pieces); n > 0 {
		return ru.plan.Pieces[n-1].Last
	}
	return 0
}

// describeGaps lists the plan's markers and the offsets no piece covers.
func (ru *run) describeGaps() {
	var prev *Piece
	for i := range ru.plan.Pieces {
		pc := &ru.plan.Pieces[i]
		if pc.Marker != "" {
			ru.res.Markers = append(ru.res.Markers, fmt.Sprintf("%d..%d %s", pc.First, pc.Last, pc.Marker))
		}
		switch {
		case prev == nil && pc.First > 0:
			ru.res.Missing = append(ru.res.Missing, fmt.Sprintf("0..%d", pc.First-1))
		case prev != nil && pc.First > prev.Last+1:
			ru.res.Missing = append(ru.res.Missing, fmt.Sprintf("%d..%d", prev.Last+1, pc.First-1))
		}
		prev = pc
	}
}

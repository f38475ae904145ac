package drain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
)

// errOutOfTime ends a partition's loop without an error when too little of
// the run's time is left to start another object.
var errOutOfTime = errors.New("deadline margin reached")

const deadlineStop = "deadline: no new objects started with less than deadline_margin left"

// errStopped ends a partition's loop without an error: the partition moved
// to another member, so this run leaves it to its next owner.
var errStopped = errors.New("partition handed over")

// missingError says Iggy no longer holds offsets First..Last (retention).
type missingError struct {
	First, Last uint64
	// Next is the first offset Iggy still has, and Timestamp its server time.
	Next, Timestamp uint64
}

func (e *missingError) Error() string {
	return fmt.Sprintf("offsets %d..%d are no longer in Iggy", e.First, e.Last)
}

// worker drains one partition within one run.
type worker struct {
	r    *Runner
	conn Conn
	j    job
	p    batch.Partition
	ps   *PartitionSummary
	log  *slog.Logger

	st        state.State
	ttl       time.Duration
	lastWrite time.Time

	enc       *batch.Encoder // feeds acc; its invalid-payload count is the partition's
	renderEnc *batch.Encoder // re-renders ranges (streaming, recovery)
	acc       *batch.Accumulator
	rot       batch.Rotation
	keep      int64
	// inflight delivers the result of the object being written in the
	// background; while it is set, that write owns st and lastWrite.
	inflight chan writeResult
	// pipeline is the run's read-ahead slot (see handOff).
	pipeline chan struct{}
	// retries counts upload retries; the background write adds to it too.
	retries atomic.Uint64
	zbuf    []byte
	ext     string
}

func (r *Runner) drainPartition(ctx context.Context, conn Conn, j job, pipeline chan struct{}) (ps PartitionSummary, err error) {
	ps = r.newSummary(j)
	defer func() {
		if err != nil {
			ps.Error = err.Error()
		}
	}()
	id := j.part.ID
	if j.part.MessagesCount == 0 {
		ps.Skipped = "partition is empty"
		return ps, nil
	}
	// Ownership probe: the newest message always exists, and a poll of a
	// partition this member does not own answers nothing.
	probe, owned, err := conn.Poll(ctx, j.topic, id, j.part.CurrentOffset, 1, nil)
	if err != nil && !errors.Is(err, source.ErrNotOwner) {
		return ps, err
	}
	if !owned || len(probe) == 0 {
		ps.Skipped = fmt.Sprintf("assigned to another member of consumer group %q", j.topic.Group)
		return ps, nil
	}

	w, err := r.newWorker(conn, j, &ps)
	if err != nil {
		return ps, err
	}
	w.pipeline = pipeline
	key := state.Key{Group: j.topic.Group, Stream: j.topic.Stream, Topic: j.topic.Topic, Partition: id}
	w.st, err = r.State.Acquire(ctx, key, r.Owner, w.ttl)
	if errors.Is(err, state.ErrLeaseHeld) {
		ps.Skipped = "leased by another run: " + err.Error()
		return ps, nil
	}
	if err != nil {
		return ps, fmt.Errorf("partition %s: %w", w.name(), err)
	}
	w.lastWrite = r.now()
	defer func() {
		if errors.Is(err, ErrCrash) {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
		defer cancel()
		if rerr := r.State.Release(rctx, w.st); rerr != nil {
			w.log.Warn("releasing the partition lease failed; it expires by itself", "error", rerr.Error())
		}
	}()

	err = w.run(ctx)
	if errors.Is(err, errOutOfTime) {
		err = nil
		ps.Stopped = deadlineStop
	}
	if errors.Is(err, errStopped) {
		err = nil
		if ps.Stopped == "" {
			ps.Stopped = "partition moved to another member"
		}
	}
	ps.Retries = w.retries.Load()
	if w.st.HasWritten {
		c := w.st.LastWritten
		ps.Committed = &c
	}
	ps.InvalidPayloads = w.enc.InvalidPayloads()
	if err != nil && !errors.Is(err, ErrCrash) {
		err = fmt.Errorf("partition %s: %w", w.name(), err)
	}
	return ps, err
}

func (r *Runner) newWorker(conn Conn, j job, ps *PartitionSummary) (*worker, error) {
	pc := &r.Config.Plugin
	p := batch.Partition{Stream: j.topic.Stream, Topic: j.topic.Topic, ID: j.part.ID}
	opts := batch.Options{
		Format:          batch.Format(pc.OutputFormat),
		Schema:          j.stream.Schema,
		IncludeMetadata: pc.IncludeMetadata,
		IncludeHeaders:  pc.IncludeHeaders,
		InvalidPayload:  pc.InvalidPayload,
		Transformer:     r.Transformer,
	}
	enc, err := batch.NewEncoder(p, opts)
	if err != nil {
		return nil, err
	}
	renderEnc, err := batch.NewEncoder(p, opts)
	if err != nil {
		return nil, err
	}
	rot := batch.Rotation{MaxAge: pc.MaxFileAge}
	if pc.FileRotation == "messages" {
		rot.MaxMessages = pc.MaxMessagesPerFile
	} else {
		rot.MaxBytes = pc.MaxFileSize
		rot.MaxMessages = pc.MaxMessagesPerFile // 0 = unset
	}
	keep := r.KeepLimit
	if keep <= 0 {
		keep = pc.MultipartThreshold
	}
	ext := batch.ObjectExt(batch.Format(pc.OutputFormat), batch.Compression(pc.Compression))
	ttl := pc.LeaseDuration
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	return &worker{
		r: r, conn: conn, j: j, p: p, ps: ps, ttl: ttl,
		log:       r.logger().With("stream", p.Stream, "topic", p.Topic, "partition", p.ID),
		enc:       enc,
		renderEnc: renderEnc,
		acc:       batch.NewAccumulator(enc, rot, keep),
		rot:       rot,
		keep:      keep,
		ext:       ext,
	}, nil
}

func (w *worker) name() string { return fmt.Sprintf("%s/%s/%d", w.p.Stream, w.p.Topic, w.p.ID) }

func (w *worker) hook(s Step) error {
	if w.r.Hook == nil {
		return nil
	}
	if err := w.r.Hook(s, w.p); err != nil {
		return fmt.Errorf("%w at %s on %s: %w", ErrCrash, s, w.name(), err)
	}
	return nil
}

func (w *worker) run(ctx context.Context) error {
	if w.st.Intent != nil {
		if err := w.recover(ctx); err != nil {
			return err
		}
	}
	next, err := w.reconcile(ctx)
	if err != nil {
		return err
	}
	return w.loop(ctx, next)
}

// reconcile finds where to continue: after the later of the group's stored
// offset and the state's last written offset, bringing the group up to the
// state when a run died between recording an object and storing the offset.
func (w *worker) reconcile(ctx context.Context) (uint64, error) {
	stored, has, err := w.conn.StoredOffset(ctx, w.j.topic, w.p.ID)
	if err != nil {
		return 0, err
	}
	switch {
	case w.st.HasWritten && (!has || stored < w.st.LastWritten):
		if err := w.storeOffset(ctx, w.st.LastWritten); err != nil {
			return 0, err
		}
		return w.st.LastWritten + 1, nil
	case has && (!w.st.HasWritten || stored > w.st.LastWritten):
		// The group is ahead of the state (a new state table, or offsets
		// moved by another tool): the group's position is the truth.
		st, err := w.r.State.Skip(ctx, w.st, stored, 0, w.ttl)
		if err != nil {
			return 0, err
		}
		w.st, w.lastWrite = st, w.r.now()
		return stored + 1, nil
	case w.st.HasWritten:
		return w.st.LastWritten + 1, nil
	}
	return 0, nil
}

func (w *worker) loop(ctx context.Context, next uint64) (err error) {
	batchLen := w.j.stream.BatchLength
	if batchLen == 0 {
		batchLen = 1000
	}
	var pending []batch.Message
	defer func() {
		if werr := w.waitWrite(); err == nil {
			err = werr
		}
		w.ps.Pending = uint64(w.acc.Len())
	}()
	for {
		if w.outOfTime(ctx) {
			w.ps.Stopped = deadlineStop
			return nil
		}
		if err := w.maybeRenew(ctx); err != nil {
			return err
		}
		var owned bool
		var err error
		pending, owned, err = w.conn.Poll(ctx, w.j.topic, w.p.ID, next, batchLen, pending[:0])
		if errors.Is(err, source.ErrNotOwner) {
			w.ps.Stopped = "partition moved to another member"
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.hook(StepPolled); err != nil {
			return err
		}
		if len(pending) == 0 {
			if w.acc.Len() > 0 && w.acc.Due(w.r.now()) {
				return w.handOff(ctx)
			}
			if !owned && w.acc.Len() > 0 {
				w.ps.Stopped = "partition moved to another member"
			}
			return nil
		}
		for i := range pending {
			m := &pending[i]
			if m.Offset < next {
				continue
			}
			if m.Offset > next {
				if w.acc.Len() > 0 {
					if err := w.handOff(ctx); err != nil {
						return err
					}
				}
				if err := w.waitWrite(); err != nil {
					return err
				}
				if err := w.writeGap(ctx, next, m.Offset-1, m.Timestamp); err != nil {
					return err
				}
				next = m.Offset
			}
			added, err := w.acc.Add(m)
			if err != nil {
				// invalid_payload = "fail": keep what came before, then stop
				// here. The payload error is the run's error even when the
				// write before it stops on the deadline or a hand-over.
				if w.acc.Len() > 0 {
					if werr := w.handOff(ctx); werr != nil && !errors.Is(werr, errOutOfTime) && !errors.Is(werr, errStopped) {
						return errors.Join(err, werr)
					}
				}
				return err
			}
			if !added {
				if err := w.handOff(ctx); err != nil {
					return err
				}
				if added, err = w.acc.Add(m); err != nil {
					return err
				} else if !added {
					return fmt.Errorf("internal error: an empty object refused offset %d", m.Offset)
				}
			}
			next = m.Offset + 1
			if w.acc.Full() {
				if err := w.handOff(ctx); err != nil {
					return err
				}
			}
		}
	}
}

// handOff writes the accumulated object. When the run's overlap slot is
// free it writes in the background and gives the loop a fresh accumulator,
// so that reading and encoding the next object overlaps with uploading this
// one; otherwise it writes in line. Either way a partition's objects are
// written one after the other: the previous write finishes first.
func (w *worker) handOff(ctx context.Context) error {
	if err := w.waitWrite(); err != nil {
		return err
	}
	if w.outOfTime(ctx) {
		// Too late to start an object; its messages stay in Iggy.
		return errOutOfTime
	}
	select {
	case w.pipeline <- struct{}{}:
	default:
		// Another partition holds the overlap slot: write in line.
		wr, err := w.writeAcc(ctx, w.acc)
		w.acc.Reset()
		if wr.ok {
			w.ps.wrote(wr.first, wr.last, wr.messages, wr.bytes)
		}
		return err
	}
	full := w.acc
	w.acc = batch.NewAccumulator(w.enc, w.rot, w.keep)
	done := make(chan writeResult, 1)
	w.inflight = done
	go func() {
		wr, err := w.writeAcc(ctx, full)
		done <- writeResult{wrote: wr, err: err}
	}()
	return nil
}

type writeResult struct {
	wrote written
	err   error
}

// waitWrite waits for the background write, if any, and returns its error.
func (w *worker) waitWrite() error {
	if w.inflight == nil {
		return nil
	}
	return w.collect(<-w.inflight)
}

// collect takes a finished background write's figures and gives back its
// overlap slot; its buffer goes to the garbage collector, so that only a
// partition holding the slot ever has two objects in memory.
func (w *worker) collect(res writeResult) error {
	w.inflight = nil
	<-w.pipeline
	if res.wrote.ok {
		w.ps.wrote(res.wrote.first, res.wrote.last, res.wrote.messages, res.wrote.bytes)
	}
	return res.err
}

func (w *worker) outOfTime(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < w.r.Config.Plugin.DeadlineMargin
}

func (w *worker) maybeRenew(ctx context.Context) error {
	if w.inflight != nil {
		select {
		case res := <-w.inflight:
			if err := w.collect(res); err != nil {
				return err
			}
		default:
			// The write in flight owns w.st, and renews the lease itself.
			return nil
		}
	}
	if w.r.now().Sub(w.lastWrite) < w.ttl/3 {
		return nil
	}
	st, err := w.r.State.Renew(ctx, w.st, w.ttl)
	if err != nil {
		return err
	}
	w.st, w.lastWrite = st, w.r.now()
	return nil
}

func (w *worker) objectKey(first, last, ts uint64, ext string) string {
	pc := &w.r.Config.Plugin
	return keys.NewNamer(pc.Prefix, pc.Template, ext).Partition(w.p.Stream, w.p.Topic, w.p.ID).Object(first, last, ts)
}

// gapKey names a gap marker: the object name's range with a leading '_',
// which Athena, Hive and Spark skip when they read a table location.
func (w *worker) gapKey(first, last, ts uint64) string {
	k := w.objectKey(first, last, ts, "gap")
	i := strings.LastIndexByte(k, '/') + 1
	return k[:i] + "_" + k[i:]
}

func isGapKey(k string) bool { return strings.HasSuffix(k, ".gap") }

func (w *worker) object(key string) s3store.Object {
	pc := &w.r.Config.Plugin
	return s3store.Object{Key: key, ContentType: batch.Format(pc.OutputFormat).ContentType(), ContentEncoding: batch.Compression(pc.Compression).ContentEncoding()}
}

func (w *worker) setIntent(ctx context.Context, in state.Intent) error {
	st, err := w.r.State.SetIntent(ctx, w.st, in, w.ttl)
	if err != nil {
		return err
	}
	w.st, w.lastWrite = st, w.r.now()
	return w.hook(StepIntent)
}

// finish marks the intent written and stores the offset.
func (w *worker) finish(ctx context.Context, d state.Done) error {
	if err := w.hook(StepUploaded); err != nil {
		return err
	}
	last := w.st.Intent.Last
	st, err := w.r.State.Complete(ctx, w.st, d, w.ttl)
	if err != nil {
		return err
	}
	w.st, w.lastWrite = st, w.r.now()
	if err := w.hook(StepStateWritten); err != nil {
		return err
	}
	if err := w.hook(StepBeforeStore); err != nil {
		return err
	}
	if err := w.storeOffset(ctx, last); err != nil {
		return err
	}
	return w.hook(StepStored)
}

func (w *worker) storeOffset(ctx context.Context, last uint64) error {
	err := w.conn.StoreOffset(ctx, w.j.topic, w.p.ID, last)
	if errors.Is(err, source.ErrNotOwner) {
		// The state holds the position; the partition's next owner brings
		// the group's offset up to it.
		w.log.Info("partition moved to another member before its offset was stored", "offset", last)
		return errStopped
	}
	return err
}

// written is what one object write put in S3, for the partition's summary.
type written struct {
	ok                           bool
	first, last, messages, bytes uint64
}

// writeAcc writes the accumulated object: intent, upload, written, offset.
// It runs in the background (see handOff), so it touches no summary field.
func (w *worker) writeAcc(ctx context.Context, a *batch.Accumulator) (written, error) {
	first, last, n := a.First(), a.Last(), uint64(a.Len())
	key := w.objectKey(first, last, a.FirstTimestamp(), w.ext)
	if err := w.setIntent(ctx, state.Intent{First: first, Last: last, ObjectKey: key}); err != nil {
		return written{}, err
	}
	var res s3store.Result
	var err error
	if a.Spilled() {
		res, err = w.stream(ctx, key, first, last)
	} else {
		if err := w.hook(StepMidUpload); err != nil {
			return written{}, err
		}
		res, err = w.put(ctx, key, a.Bytes())
	}
	if err != nil {
		return written{}, err
	}
	err = w.finish(ctx, state.Done{Messages: n, Bytes: uint64(res.Bytes)})
	if err == nil || errors.Is(err, errStopped) {
		return written{ok: true, first: first, last: last, messages: n, bytes: uint64(res.Bytes)}, err
	}
	return written{}, err
}

func (w *worker) put(ctx context.Context, key string, body []byte) (s3store.Result, error) {
	if c := w.r.Config.Plugin.Compression; c != "" && c != "none" {
		var err error
		if w.zbuf, err = batch.Compress(w.zbuf[:0], body, batch.Compression(c)); err != nil {
			return s3store.Result{}, fmt.Errorf("compress %s: %w", key, err)
		}
		body = w.zbuf
	}
	res, err := w.r.Objects.Put(ctx, w.object(key), body)
	w.retries.Add(uint64(res.Retries))
	return res, err
}

// stream re-reads first..last from Iggy and streams the rendered object, so
// an object of any size is written with bounded memory.
func (w *worker) stream(ctx context.Context, key string, first, last uint64) (s3store.Result, error) {
	res, err := w.r.Objects.Stream(ctx, w.object(key), func(dst io.Writer) error {
		ow, err := batch.NewObjectWriter(dst, w.renderEnc, batch.Compression(w.r.Config.Plugin.Compression))
		if err != nil {
			return err
		}
		if err := w.render(ctx, first, last, ow.Write); err != nil {
			return err
		}
		return ow.Close()
	})
	w.retries.Add(uint64(res.Retries))
	return res, err
}

// render reads exactly first..last and hands each message to fn in order.
func (w *worker) render(ctx context.Context, first, last uint64, fn func(*batch.Message) error) error {
	batchLen := uint64(w.j.stream.BatchLength)
	if batchLen == 0 {
		batchLen = 1000
	}
	next := first
	var buf []batch.Message
	midDone := false
	for next <= last {
		count := min(batchLen, last-next+1)
		var err error
		buf, _, err = w.conn.Poll(ctx, w.j.topic, w.p.ID, next, uint32(count), buf[:0])
		if err != nil {
			return err
		}
		if len(buf) == 0 {
			return fmt.Errorf("re-reading offsets %d..%d: Iggy returned nothing at offset %d (the partition may have moved to another member)", first, last, next)
		}
		for i := range buf {
			m := &buf[i]
			if m.Offset < next {
				continue
			}
			if next > last {
				break
			}
			if m.Offset > next {
				// Checked before the end of the range: when retention removed
				// all the rest, the first message found lies beyond it.
				return &missingError{First: next, Last: min(m.Offset-1, last), Next: m.Offset, Timestamp: m.Timestamp}
			}
			if m.Offset > last {
				break
			}
			if err := fn(m); err != nil {
				return err
			}
			next++
		}
		if !midDone {
			midDone = true
			if err := w.hook(StepMidUpload); err != nil {
				return err
			}
		}
	}
	return nil
}

// recover finishes an object a previous run recorded but did not complete.
func (w *worker) recover(ctx context.Context) error {
	in := *w.st.Intent
	w.ps.Recovered = true
	w.log.Info("recovering an unfinished object", "first", in.First, "last", in.Last, "key", in.ObjectKey)
	if isGapKey(in.ObjectKey) {
		return w.putGapMarker(ctx, in)
	}
	n := in.Last - in.First + 1
	if !strings.HasSuffix(in.ObjectKey, "."+w.ext) {
		// The output format or compression changed since the intent was
		// recorded: the object cannot be re-rendered as it was named.
		return w.settle(ctx, in, nil)
	}
	res, err := w.stream(ctx, in.ObjectKey, in.First, in.Last)
	var miss *missingError
	if errors.As(err, &miss) {
		return w.settle(ctx, in, miss)
	}
	if err != nil {
		return fmt.Errorf("recover %s: %w", in.ObjectKey, err)
	}
	if err := w.finish(ctx, state.Done{Messages: n, Bytes: uint64(res.Bytes)}); err != nil {
		return err
	}
	w.ps.wrote(in.First, in.Last, n, uint64(res.Bytes))
	return nil
}

// settle ends an intent that cannot be re-rendered: if the object reached S3
// before the crash only the bookkeeping is missing; otherwise the intent is
// dropped and its range read again — with the part retention removed (miss)
// reported as a gap.
func (w *worker) settle(ctx context.Context, in state.Intent, miss *missingError) error {
	size, exists, err := w.exists(ctx, in.ObjectKey)
	if err != nil {
		return err
	}
	n := in.Last - in.First + 1
	if exists {
		if err := w.finish(ctx, state.Done{Messages: n, Bytes: uint64(size)}); err != nil {
			return err
		}
		w.ps.wrote(in.First, in.Last, n, uint64(size))
		return nil
	}
	st, err := w.r.State.Abandon(ctx, w.st, w.ttl)
	if err != nil {
		return err
	}
	w.st, w.lastWrite = st, w.r.now()
	if miss == nil {
		return nil
	}
	// Retention removes the oldest messages first, so everything from the
	// intent's start to the first message left is gone by now.
	return w.writeGap(ctx, in.First, miss.Next-1, miss.Timestamp)
}

func (w *worker) exists(ctx context.Context, key string) (size int64, found bool, err error) {
	err = w.r.Objects.List(ctx, key, func(k string, sz int64) error {
		if k == key {
			size, found = sz, true
		}
		return nil
	})
	return size, found, err
}

// writeGap reports offsets first..last that Iggy no longer has: a marker
// object names the range, the state counts it, the offset moves past it.
func (w *worker) writeGap(ctx context.Context, first, last, ts uint64) error {
	in := state.Intent{First: first, Last: last, ObjectKey: w.gapKey(first, last, ts)}
	w.log.Warn("gap: Iggy deleted messages before the sink read them", "first", first, "last", last, "marker", in.ObjectKey)
	if err := w.setIntent(ctx, in); err != nil {
		return err
	}
	return w.putGapMarker(ctx, in)
}

// gapMarker is the body of a gap marker object. It is a pure function of
// the range, so a repeated upload writes the same bytes.
type gapMarker struct {
	Stream       string `json:"stream"`
	Topic        string `json:"topic"`
	Partition    uint32 `json:"partition"`
	FirstMissing uint64 `json:"first_missing"`
	LastMissing  uint64 `json:"last_missing"`
	Reason       string `json:"reason"`
}

func (w *worker) putGapMarker(ctx context.Context, in state.Intent) error {
	body, err := json.Marshal(gapMarker{Stream: w.p.Stream, Topic: w.p.Topic, Partition: w.p.ID, FirstMissing: in.First, LastMissing: in.Last,
		Reason: "deleted by Iggy (retention) before the sink read it"})
	if err != nil {
		return err
	}
	res, err := w.r.Objects.Put(ctx, s3store.Object{Key: in.ObjectKey, ContentType: "application/json"}, body)
	w.retries.Add(uint64(res.Retries))
	if err != nil {
		return err
	}
	w.ps.Gaps = append(w.ps.Gaps, Gap{First: in.First, Last: in.Last, MarkerKey: in.ObjectKey})
	return w.finish(ctx, state.Done{GapMessages: in.Last - in.First + 1})
}

package drain

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// objectWriter puts an object under the key its intent recorded: a
// marker, a data object built in memory (begun early, beside the write of
// its intent), or a range re-read from Iggy and streamed; with its error
// object first when records were rejected to one. It writes the state only
// to move a voided key's intent to its next revision.
type objectWriter struct {
	p     *partition
	l     *lease
	ps    *PartitionSummary
	marks *markers
	enc   *batch.Encoder // re-renders ranges (streamed objects, recovery)
	zbufs chan []byte    // compression buffers kept for the uploads that may overlap (two)
	// format and comp are what the objects are written in: the
	// configuration's, or an unfinished unit's own (inFormat).
	format batch.Format
	comp   batch.Compression
	// renderedTS is the server time of the last message render read;
	// unitValues the value objects' keys of the last unit written.
	renderedTS uint64
	unitValues []string
}

// intentFor is the intent that records s: its range and its key.
func (ow *objectWriter) intentFor(s *sealed) state.Intent {
	names := ow.l.names
	key := names.Object(s.first, s.last, s.ts)
	switch {
	case s.gap && s.cause == CauseIggyHole:
		key = names.Hole(s.first, s.last, s.ts)
	case s.gap && s.cause == CauseTooLarge:
		key = names.TooLarge(s.first, s.last, s.ts)
	case s.gap && s.cause == CauseSkipped:
		key = names.Skip(s.first, s.last, s.ts)
	case s.gap:
		key = names.Gap(s.first, s.last, s.ts)
	}
	in := state.Intent{First: s.first, Last: s.last, ObjectKey: key}
	if !s.gap {
		in.FirstTimestamp = s.ts
	}
	return in
}

// upload writes s under its intent's key, create-only, keeping the lease
// while it runs, and then gives s's accumulator back. An existing object
// with other bytes holds the same offsets (its key is its range): it is
// kept, reported and counted as written. The records rejected to an error
// object (invalid_payload = "error_object") are written right after it,
// create-only too: both are pure functions of the range, so a crash
// anywhere before the state records the object makes recovery write the
// same bytes again.
func (ow *objectWriter) upload(ctx context.Context, s *sealed) (Written, error) {
	defer s.giveBack(nil)
	for revisions := 0; ; revisions++ {
		w, err := ow.uploadOnce(ctx, s)
		if !errors.Is(err, errBurnt) || revisions == maxRevisions {
			return w, err
		}
		if err := ow.nextRevision(ctx); err != nil {
			return w, err
		}
	}
}

// errBurnt marks an upload that met the fence of a voided key.
var errBurnt = errors.New("the object's key was voided")

// maxRevisions bounds the keys one range tries (each voided key is a
// format change and its undoing, or a stray run on another configuration).
const maxRevisions = 100

// uploadOnce writes s under the intent's key. An object already there with
// other bytes holds the same offsets and is kept — unless it is the fence
// of a voided key (errBurnt): a voided key is never reused (issue 21, item
// 3), since the fence holds no records.
func (ow *objectWriter) uploadOnce(ctx context.Context, s *sealed) (Written, error) {
	// Read before the upload starts: lease renewals write the state beside it.
	key, ts := ow.l.st.Intent.ObjectKey, ow.l.st.Intent.FirstTimestamp
	w := Written{Key: key, First: s.first, Last: s.last, Gap: s.gap}
	if s.gap {
		w.Cause = gapCauseOf(key)
		ow.logMarker(s, key, w.Cause)
	} else {
		w.Messages = s.last - s.first + 1
	}
	var res s3store.Result
	err := ow.l.await(ctx, func(ctx context.Context) (err error) {
		res, err = ow.transfer(ctx, s, key, ts, w.Cause)
		return err
	})
	ow.ps.Retries += uint64(res.Retries)
	w.Bytes, w.Existed = uint64(res.Bytes), res.Existed
	if !s.gap && ow.l.names.HasValues() {
		w.Values = ow.unitValues
	}
	var ce *s3store.ConflictError
	conflict := errors.As(err, &ce)
	if (conflict || (err == nil && res.Existed)) && !s.gap {
		if err := ow.refuseBurnt(ctx, key, ce); err != nil {
			return w, err
		}
	}
	if conflict {
		ow.ps.Conflicts++
		ow.p.log.Warn("the object already exists with other bytes; kept as it is (same offsets, rendered by another configuration or run)",
			"key", key, "stored_bytes", ce.ExistingSize, "rendered_bytes", ce.SentSize)
		w.Bytes, w.Existed = uint64(ce.ExistingSize), true
		return w, nil
	}
	return w, err
}

// logMarker says what a marker about to be written reports.
func (ow *objectWriter) logMarker(s *sealed, key, cause string) {
	switch cause {
	case CauseIggyHole:
		ow.p.log.Info("gap marker: Iggy's offsets skip these numbers (nothing is missing)", "first", s.first, "last", s.last, "marker", key)
	case CauseTooLarge:
		ow.p.log.Warn("too-large marker: a message larger than max_poll_bytes is reported with its offset, not archived", "first", s.first, "last", s.last, "marker", key)
	case CauseSkipped:
		ow.p.log.Warn("skip marker: the consumer group was moved past offsets the sink had not archived; they are passed over", "first", s.first, "last", s.last, "marker", key)
	default:
		ow.p.log.Warn("gap: Iggy deleted messages before the sink read them", "first", s.first, "last", s.last, "marker", key, "cause", cause)
	}
}

// transfer puts s's marker, or its data object: the early upload's
// outcome when s went early, else written now. It runs beside the lease
// renewals, so it reads nothing of the state.
func (ow *objectWriter) transfer(ctx context.Context, s *sealed, key string, ts uint64, cause string) (s3store.Result, error) {
	if s.gap {
		return ow.marks.putGapMarker(ctx, key, s.first, s.last, cause)
	}
	var res s3store.Result
	var el errorLines
	var err error
	if e := s.early; e != nil && e.key == key {
		s.early = nil
		res, el, err = e.wait(ctx)
	} else {
		s.early.abandon(errors.New("the object's key changed")) // never: both come from its intent
		s.early = nil
		res, el, err = ow.writeData(ctx, key, ts, s)
	}
	ow.ps.Conflicts += el.conflicts
	if s.acc == nil && err == nil {
		// Recovery re-rendered it: no reader of this run saw these
		// records. Counted once the render completed (a retry renders
		// again).
		ow.ps.InvalidPayloads += el.invalid
	}
	return res, err
}

// refuseBurnt returns errBurnt when the object already at key (ce, when it
// holds other bytes) is a void's fence: then the key is burnt, even when
// this rendering is empty too (every record rejected), or when the void
// died before its marker (the marker is written now).
func (ow *objectWriter) refuseBurnt(ctx context.Context, key string, ce *s3store.ConflictError) error {
	mk, _ := keys.VoidMarker(key)
	_, voided, err := ow.p.r.Objects.Head(ctx, mk)
	if err != nil {
		return fmt.Errorf("%s already exists; looking for its void marker: %w", key, err)
	}
	if !voided && ce != nil && isFence(key, ce.ExistingSize) {
		ow.p.log.Warn("an empty object of the format fences the key without its void marker (a run died voiding it): the marker is written now", "key", key, "marker", mk)
		if _, err := ow.marks.putMarker(ctx, mk, marker{Voided: key, Reason: voidReason}); err != nil && !errors.Is(err, s3store.ErrConflict) {
			return err
		}
		voided = true
	}
	if voided {
		return fmt.Errorf("%w: %s", errBurnt, key)
	}
	return nil
}

// nextRevision moves the unfinished intent to the next revision of its
// key: the intent is abandoned and recorded again, two writes (a crash in
// between reads the range again, renders it to the voided key and comes
// back here).
func (ow *objectWriter) nextRevision(ctx context.Context) error {
	in := *ow.l.st.Intent
	next, ok := keys.NextRevision(in.ObjectKey)
	if !ok {
		return fmt.Errorf("%w: %s has no next revision", errBurnt, in.ObjectKey)
	}
	ow.p.log.Warn("the object's key was voided earlier and is never reused: the range goes under the next revision of its name",
		"key", in.ObjectKey, "revision", next, "first", in.First, "last", in.Last)
	lease := ow.p.r.Options.Lease
	if err := ow.l.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return ow.p.r.State.Abandon(ctx, st, lease)
	}); err != nil {
		return err
	}
	in.ObjectKey = next
	return ow.l.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return ow.p.r.State.SetIntent(ctx, st, in, lease)
	})
}

// writeData writes s's error object, when records were rejected to one,
// and then its data object: from its accumulator when it was built in
// memory, else re-read from Iggy and streamed. The error object goes first
// so that a data object in S3 always has its error object beside it: a run
// that cannot render the range again (retention, a format change) keeps a
// data object it finds as it is (issue 21, item 8). An error object that
// already holds other bytes is kept and reported, like a data object.
func (ow *objectWriter) writeData(ctx context.Context, key string, ts uint64, s *sealed) (s3store.Result, errorLines, error) {
	if ow.l.names.HasValues() {
		return ow.writeUnit(ctx, key, ts, s)
	}
	if s.acc == nil || s.acc.Spilled() {
		if err := ow.streamErrorsFirst(ctx, key, ts, s); err != nil {
			return s3store.Result{}, errorLines{}, err
		}
		return ow.stream(ctx, key, s.first, s.last, nil)
	}
	if err := ow.p.hook(StepMidUpload); err != nil {
		return s3store.Result{}, errorLines{}, err
	}
	return ow.renderAndPut(ctx, key, ts, s.acc.(*batch.Accumulator), s, nil)
}

// startEarly begins s's upload under the key of its intent, held at a
// gate; nil when s does not go early.
func (ow *objectWriter) startEarly(ctx context.Context, s *sealed) *early {
	a, whole := s.acc.(*batch.Accumulator) // a unit split by values is written by writeUnit
	if s.gap || !whole || a.Spilled() {
		return nil
	}
	in := ow.intentFor(s)
	ectx, cancel := context.WithCancelCause(ctx)
	e := &early{key: in.ObjectKey, gate: s3store.NewGate(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		e.res, e.el, e.err = ow.renderAndPut(ectx, in.ObjectKey, in.FirstTimestamp, a, s, e.gate)
	}()
	return e
}

// renderAndPut renders acc, s's records (or one value's of them) built in
// memory, and writes its error object (if records were rejected) and its
// data object, both held at gate when there is one. It touches nothing of
// the writer but its compression buffers, so it may run beside the state
// write and beside the upload of the object before (early).
func (ow *objectWriter) renderAndPut(ctx context.Context, key string, ts uint64, acc *batch.Accumulator, s *sealed, gate *s3store.Gate) (s3store.Result, errorLines, error) {
	data, errs, err := acc.Render()
	if err != nil {
		return s3store.Result{}, errorLines{}, err
	}
	el := errorLines{body: errs, kept: true}
	if len(errs) > 0 {
		el.rejected = bytes.Count(errs, []byte{'\n'})
		ekey, err := ow.errorsKey(key, ts, s)
		if err != nil {
			return s3store.Result{}, el, err
		}
		obj := errorsObject(ekey)
		obj.Gate = gate
		_, err = ow.p.r.Objects.Put(ctx, obj, errs)
		if err := ow.errorsWritten(&el.conflicts, ekey, key, el.rejected, err); err != nil {
			return s3store.Result{}, el, err
		}
	}
	res, err := ow.put(ctx, key, data, gate)
	return res, el, err
}

// streamErrorsFirst writes the error object of a streamed data object
// before it, by a render of its own that writes only the rejected records
// (nothing when there are none). Only under invalid_payload =
// "error_object": the error prefix is configured then.
func (ow *objectWriter) streamErrorsFirst(ctx context.Context, dataKey string, ts uint64, s *sealed) error {
	return ow.streamErrorsOf(ctx, dataKey, ts, s, nil)
}

// streamErrorsOf is streamErrorsFirst for the records of s that keep
// takes (all of them when keep is nil).
func (ow *objectWriter) streamErrorsOf(ctx context.Context, dataKey string, ts uint64, s *sealed, keep func(*batch.Message) bool) error {
	if !ow.p.errorObjects() {
		return nil
	}
	ekey, err := ow.errorsKey(dataKey, ts, s)
	if err != nil {
		return err
	}
	res, err := ow.streamErrors(ctx, ekey, s.first, s.last, keep)
	if res.Bytes == 0 && err == nil {
		return nil
	}
	return ow.errorsWritten(&ow.ps.Conflicts, ekey, dataKey, -1, err)
}

// errorsKey is the key of the error object of the data object at dataKey,
// whose first message has server time ts.
func (ow *objectWriter) errorsKey(dataKey string, ts uint64, s *sealed) (string, error) {
	key, ok := ow.p.r.Options.Names.ErrorsKey(dataKey)
	if !ok {
		key = ow.l.names.Errors(s.first, s.last, ts)
	}
	if key == "" {
		return "", fmt.Errorf("records of %s were rejected to an error object, but no error prefix is configured (drain.Options.Names needs WithErrors)", dataKey)
	}
	return key, nil
}

// errorsWritten settles the write of an error object: a conflict (other
// bytes already there, rendered by another configuration) is kept and
// reported (counted in conflicts); records < 0 means not counted.
func (ow *objectWriter) errorsWritten(conflicts *uint64, key, dataKey string, records int, err error) error {
	var ce *s3store.ConflictError
	if errors.As(err, &ce) && ce.ExistingSize == 0 {
		// The empty error object a void leaves: the data key is burnt
		// too; found before the data object is written.
		return fmt.Errorf("%w: %s (its error key is fenced)", errBurnt, dataKey)
	}
	if errors.As(err, &ce) {
		*conflicts++
		ow.p.log.Warn("the error object already exists with other bytes; kept as it is (rendered by another configuration)",
			"key", key, "stored_bytes", ce.ExistingSize, "rendered_bytes", ce.SentSize)
		return nil
	}
	if err == nil {
		attrs := []any{"key", key, "object", dataKey}
		if records >= 0 {
			attrs = append(attrs, "records", records)
		}
		ow.p.log.Info("records that could not be written went to an error object", attrs...)
	}
	return err
}

func (ow *objectWriter) object(key string) s3store.Object {
	return s3store.Object{Key: key, ContentType: ow.format.ContentType(), ContentEncoding: ow.comp.ContentEncoding()}
}

// put writes body, compressed when the configuration says so, under key.
// Two puts may run at once (an object's upload and the next one's, held
// at its gate), so each compresses into a buffer of its own.
func (ow *objectWriter) put(ctx context.Context, key string, body []byte, gate *s3store.Gate) (s3store.Result, error) {
	if z := ow.comp; z != "" && z != batch.CompressionNone {
		var zbuf []byte
		select {
		case zbuf = <-ow.zbufs:
		default:
		}
		defer func() {
			select {
			case ow.zbufs <- zbuf:
			default:
			}
		}()
		var err error
		if zbuf, err = batch.Compress(zbuf[:0], body, z); err != nil {
			return s3store.Result{}, err
		}
		body = zbuf
	}
	obj := ow.object(key)
	obj.Gate = gate
	return ow.p.r.Objects.Put(ctx, obj, body)
}

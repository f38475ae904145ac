package drain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Why offsets are missing, as gap markers say it: a cause for the audit
// and a reason for people.
const (
	CauseRetention = "retention"
	CauseIggyHole  = "iggy_hole"
	CauseRecreated = "recreated"
	// CauseSkipped: the consumer group's offset was moved past offsets the
	// sink had not archived (an operator's choice); nothing was lost by
	// the sink, and the audit accepts the marker.
	CauseSkipped = "skipped"
	// CauseTooLarge: a message larger than max_poll_bytes, reported with
	// its offset instead of archived.
	CauseTooLarge = "too_large"
)

var gapReasons = map[string]string{
	CauseRetention: "deleted by Iggy (retention) before the sink read it",
	CauseIggyHole:  "never written: Iggy's offsets skip these numbers (a server recovery can leave such a hole); no message is missing",
	CauseRecreated: "deleted with the partition (it was re-created) before the sink wrote it",
	CauseSkipped:   "passed over: the consumer group's offset was moved past them before the sink archived them",
	CauseTooLarge:  "not archived: larger than max_poll_bytes, what one poll may take in; read it from Iggy by its offset",
}

// gapCause tells why offsets up to last are missing: the partition's
// first message left is after them (retention deletes the oldest first),
// or it is before them and they were never written (a hole the server left).
// It asks the server, so it is called while the partition is this run's,
// when the gap is found; the marker's key then carries the answer (a hole
// marker or a gap marker), and a recovery reads it from there.
func (p *partition) gapCause(ctx context.Context, last uint64) (string, error) {
	first, _, err := p.conn.Poll(ctx, p.topic, p.info.ID, 0, 1, nil)
	if err != nil {
		return "", fmt.Errorf("find the partition's first message, to tell a retention gap from a hole: %w", err)
	}
	if len(first) > 0 && first[0].Offset <= last {
		return CauseIggyHole, nil
	}
	return CauseRetention, nil
}

// upload writes s under its intent's key, create-only, keeping the lease
// while it runs, and then gives s's accumulator back. An existing object
// with other bytes holds the same offsets (its key is its range): it is
// kept, reported and counted as written. The records rejected to an error
// object (invalid_payload = "error_object") are written right after it,
// create-only too: both are pure functions of the range, so a crash
// anywhere before the state records the object makes recovery write the
// same bytes again.
func (c *committer) upload(ctx context.Context, s *sealed) (Written, error) {
	defer s.giveBack(nil)
	for revisions := 0; ; revisions++ {
		w, err := c.uploadOnce(ctx, s)
		if !errors.Is(err, errBurnt) || revisions == maxRevisions {
			return w, err
		}
		if err := c.nextRevision(ctx); err != nil {
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
func (c *committer) uploadOnce(ctx context.Context, s *sealed) (Written, error) {
	// Read before the upload starts: lease renewals write c.st beside it.
	key, ts := c.st.Intent.ObjectKey, c.st.Intent.FirstTimestamp
	w := Written{Key: key, First: s.first, Last: s.last, Gap: s.gap}
	if s.gap {
		w.Cause = gapCauseOf(key)
	}
	switch {
	case w.Cause == CauseIggyHole:
		c.p.log.Info("gap marker: Iggy's offsets skip these numbers (nothing is missing)", "first", s.first, "last", s.last, "marker", key)
	case w.Cause == CauseTooLarge:
		c.p.log.Warn("too-large marker: a message larger than max_poll_bytes is reported with its offset, not archived", "first", s.first, "last", s.last, "marker", key)
	case w.Cause == CauseSkipped:
		c.p.log.Warn("skip marker: the consumer group was moved past offsets the sink had not archived; they are passed over", "first", s.first, "last", s.last, "marker", key)
	case s.gap:
		c.p.log.Warn("gap: Iggy deleted messages before the sink read them", "first", s.first, "last", s.last, "marker", key, "cause", w.Cause)
	default:
		w.Messages = s.last - s.first + 1
	}
	var res s3store.Result
	err := c.await(ctx, func(ctx context.Context) error {
		if s.gap {
			var err error
			res, err = c.putGapMarker(ctx, key, s.first, s.last, w.Cause)
			return err
		}
		var el errorLines
		var err error
		if e := s.early; e != nil && e.key == key {
			s.early = nil
			res, el, err = e.wait(ctx)
		} else {
			s.early.abandon(errors.New("the object's key changed")) // never: both come from its intent
			s.early = nil
			res, el, err = c.writeData(ctx, key, ts, s)
		}
		c.ps.Conflicts += el.conflicts
		if s.acc == nil && err == nil {
			// Recovery re-rendered it: no reader of this run saw these
			// records. Counted once the render completed (a retry renders
			// again).
			c.ps.InvalidPayloads += el.invalid
		}
		return err
	})
	c.ps.Retries += uint64(res.Retries)
	w.Bytes, w.Existed = uint64(res.Bytes), res.Existed
	var ce *s3store.ConflictError
	if conflict := errors.As(err, &ce); (conflict || (err == nil && res.Existed)) && !s.gap {
		// An object already at the key may be a void's fence: then the
		// key is burnt, even when this rendering is empty too (every
		// record rejected), or when the void died before its marker.
		mk, _ := keys.VoidMarker(key)
		_, voided, herr := c.p.r.Objects.Head(ctx, mk)
		if herr != nil {
			return w, fmt.Errorf("%s already exists; looking for its void marker: %w", key, herr)
		}
		if !voided && conflict && c.isFence(key, ce.ExistingSize) {
			c.p.log.Warn("an empty object of the format fences the key without its void marker (a run died voiding it): the marker is written now", "key", key, "marker", mk)
			if _, err := c.putMarker(ctx, mk, marker{Voided: key, Reason: voidReason}); err != nil && !errors.Is(err, s3store.ErrConflict) {
				return w, err
			}
			voided = true
		}
		if voided {
			return w, fmt.Errorf("%w: %s", errBurnt, key)
		}
	}
	if errors.As(err, &ce) {
		c.ps.Conflicts++
		c.p.log.Warn("the object already exists with other bytes; kept as it is (same offsets, rendered by another configuration or run)",
			"key", key, "stored_bytes", ce.ExistingSize, "rendered_bytes", ce.SentSize)
		w.Bytes, w.Existed = uint64(ce.ExistingSize), true
		return w, nil
	}
	return w, err
}

// nextRevision moves the unfinished intent to the next revision of its
// key: the intent is abandoned and recorded again, two writes (a crash in
// between reads the range again, renders it to the voided key and comes
// back here).
func (c *committer) nextRevision(ctx context.Context) error {
	in := *c.st.Intent
	next, ok := keys.NextRevision(in.ObjectKey)
	if !ok {
		return fmt.Errorf("%w: %s has no next revision", errBurnt, in.ObjectKey)
	}
	c.p.log.Warn("the object's key was voided earlier and is never reused: the range goes under the next revision of its name",
		"key", in.ObjectKey, "revision", next, "first", in.First, "last", in.Last)
	if err := c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.Abandon(ctx, st, c.p.r.Options.Lease)
	}); err != nil {
		return err
	}
	in.ObjectKey = next
	return c.write(ctx, "", func(ctx context.Context, st state.State) (state.State, error) {
		return c.p.r.State.SetIntent(ctx, st, in, c.p.r.Options.Lease)
	})
}

// writeData writes s's error object, when records were rejected to one,
// and then its data object: from its accumulator when it was built in
// memory, else re-read from Iggy and streamed. The error object goes first
// so that a data object in S3 always has its error object beside it: a run
// that cannot render the range again (retention, a format change) keeps a
// data object it finds as it is (issue 21, item 8). An error object that
// already holds other bytes is kept and reported, like a data object.
func (c *committer) writeData(ctx context.Context, key string, ts uint64, s *sealed) (s3store.Result, errorLines, error) {
	if s.acc == nil || s.acc.Spilled() {
		if err := c.streamErrorsFirst(ctx, key, ts, s); err != nil {
			return s3store.Result{}, errorLines{}, err
		}
		return c.stream(ctx, key, s.first, s.last)
	}
	if err := c.p.hook(StepMidUpload); err != nil {
		return s3store.Result{}, errorLines{}, err
	}
	return c.renderAndPut(ctx, key, ts, s, nil)
}

// renderAndPut renders s, built in memory, and writes its error object
// (if records were rejected) and its data object, both held at gate when
// there is one. It touches nothing of the committer but its compression
// buffers, so it may run beside the committer's state write and beside
// the upload of the object before (early).
func (c *committer) renderAndPut(ctx context.Context, key string, ts uint64, s *sealed, gate *s3store.Gate) (s3store.Result, errorLines, error) {
	data, errs, err := s.acc.Render()
	if err != nil {
		return s3store.Result{}, errorLines{}, err
	}
	el := errorLines{body: errs, kept: true}
	if len(errs) > 0 {
		el.rejected = bytes.Count(errs, []byte{'\n'})
		ekey, err := c.errorsKey(key, ts, s)
		if err != nil {
			return s3store.Result{}, el, err
		}
		obj := errorsObject(ekey)
		obj.Gate = gate
		_, err = c.p.r.Objects.Put(ctx, obj, errs)
		if err := c.errorsWritten(&el.conflicts, ekey, key, el.rejected, err); err != nil {
			return s3store.Result{}, el, err
		}
	}
	res, err := c.put(ctx, key, data, gate)
	return res, el, err
}

// streamErrorsFirst writes the error object of a streamed data object
// before it, by a render of its own that writes only the rejected records
// (nothing when there are none). Only under invalid_payload =
// "error_object": the error prefix is configured then.
func (c *committer) streamErrorsFirst(ctx context.Context, dataKey string, ts uint64, s *sealed) error {
	if !c.errorObjects() {
		return nil
	}
	ekey, err := c.errorsKey(dataKey, ts, s)
	if err != nil {
		return err
	}
	res, err := c.streamErrors(ctx, ekey, s.first, s.last)
	if res.Bytes == 0 && err == nil {
		return nil
	}
	return c.errorsWritten(&c.ps.Conflicts, ekey, dataKey, -1, err)
}

// errorObjects reports whether rejected records go to error objects
// (invalid_payload = "error_object").
func (c *committer) errorObjects() bool {
	return c.p.r.Options.Records.InvalidPayload == batch.InvalidErrorObject
}

// errorsKey is the key of the error object of the data object at dataKey,
// whose first message has server time ts.
func (c *committer) errorsKey(dataKey string, ts uint64, s *sealed) (string, error) {
	key, ok := c.p.r.Options.Names.ErrorsKey(dataKey)
	if !ok {
		key = c.names.Errors(s.first, s.last, ts)
	}
	if key == "" {
		return "", fmt.Errorf("records of %s were rejected to an error object, but no error prefix is configured (drain.Options.Names needs WithErrors)", dataKey)
	}
	return key, nil
}

// errorsWritten settles the write of an error object: a conflict (other
// bytes already there, rendered by another configuration) is kept and
// reported (counted in conflicts); records < 0 means not counted.
func (c *committer) errorsWritten(conflicts *uint64, key, dataKey string, records int, err error) error {
	var ce *s3store.ConflictError
	if errors.As(err, &ce) && ce.ExistingSize == 0 {
		// The empty error object a void leaves: the data key is burnt
		// too; found before the data object is written.
		return fmt.Errorf("%w: %s (its error key is fenced)", errBurnt, dataKey)
	}
	if errors.As(err, &ce) {
		*conflicts++
		c.p.log.Warn("the error object already exists with other bytes; kept as it is (rendered by another configuration)",
			"key", key, "stored_bytes", ce.ExistingSize, "rendered_bytes", ce.SentSize)
		return nil
	}
	if err == nil {
		attrs := []any{"key", key, "object", dataKey}
		if records >= 0 {
			attrs = append(attrs, "records", records)
		}
		c.p.log.Info("records that could not be written went to an error object", attrs...)
	}
	return err
}

// errorsObject is how error objects are stored: JSON Lines, never compressed.
func errorsObject(key string) s3store.Object {
	return s3store.Object{Key: key, ContentType: batch.FormatJSONLines.ContentType()}
}

func (c *committer) object(key string) s3store.Object {
	o := &c.p.r.Options
	return s3store.Object{Key: key, ContentType: o.Records.Format.ContentType(), ContentEncoding: o.Compression.ContentEncoding()}
}

// put writes body, compressed when the configuration says so, under key.
// Two puts may run at once (an object's upload and the next one's, held
// at its gate), so each compresses into a buffer of its own.
func (c *committer) put(ctx context.Context, key string, body []byte, gate *s3store.Gate) (s3store.Result, error) {
	if z := c.p.r.Options.Compression; z != "" && z != batch.CompressionNone {
		var zbuf []byte
		select {
		case zbuf = <-c.zbufs:
		default:
		}
		defer func() {
			select {
			case c.zbufs <- zbuf:
			default:
			}
		}()
		var err error
		if zbuf, err = batch.Compress(zbuf[:0], body, z); err != nil {
			return s3store.Result{}, err
		}
		body = zbuf
	}
	obj := c.object(key)
	obj.Gate = gate
	return c.p.r.Objects.Put(ctx, obj, body)
}

// marker is the body of a gap or void marker: a pure function of its
// range, so a repeated write meets the same bytes.
type marker struct {
	Stream       string `json:"stream"`
	Topic        string `json:"topic"`
	Partition    uint32 `json:"partition"`
	FirstMissing uint64 `json:"first_missing,omitempty"`
	LastMissing  uint64 `json:"last_missing,omitempty"`
	Voided       string `json:"voided,omitempty"`
	// Cause is one of the Cause constants (gap markers only).
	Cause  string `json:"cause,omitempty"`
	Reason string `json:"reason"`
}

func (c *committer) putMarker(ctx context.Context, key string, m marker) (s3store.Result, error) {
	m.Stream, m.Topic, m.Partition = c.p.bp.Stream, c.p.bp.Topic, c.p.bp.ID
	body, err := json.Marshal(m)
	if err != nil {
		return s3store.Result{}, err
	}
	return c.p.r.Objects.Put(ctx, s3store.Object{Key: key, ContentType: "application/json"}, body)
}

func (c *committer) putGapMarker(ctx context.Context, key string, first, last uint64, cause string) (s3store.Result, error) {
	return c.putMarker(ctx, key, marker{FirstMissing: first, LastMissing: last, Cause: cause, Reason: gapReasons[cause]})
}

// void fences the key of an intent that will not be written: an empty
// object of its format goes there create-only, so a stalled writer can
// never still put the old object under it, and a void marker next to it
// tells readers and the audit that the key covers no offsets. If the key
// already holds an object, that object is the intent's, complete: exists.
func (c *committer) void(ctx context.Context, in state.Intent) (size int64, exists bool, err error) {
	n, _ := keys.ParseName(in.ObjectKey)
	body, ok := batch.EmptyObject(n.Ext)
	if !ok {
		c.p.log.Warn("cannot fence an unfinished object of an unknown format; a stalled writer could still write it", "key", in.ObjectKey)
		return 0, false, nil
	}
	_, err = c.p.r.Objects.Put(ctx, s3store.Object{Key: in.ObjectKey, ContentType: "application/octet-stream"}, body)
	var ce *s3store.ConflictError
	if errors.As(err, &ce) {
		return ce.ExistingSize, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	if err := c.fenceErrors(ctx, in); err != nil {
		return 0, false, err
	}
	mk, _ := keys.VoidMarker(in.ObjectKey)
	c.p.log.Warn("an unfinished object cannot be rewritten; its key is voided and its offsets read again",
		"key", in.ObjectKey, "first", in.First, "last", in.Last, "marker", mk)
	_, err = c.putMarker(ctx, mk, marker{Voided: in.ObjectKey, Reason: voidReason})
	if errors.Is(err, s3store.ErrConflict) {
		err = nil
	}
	return 0, false, err
}

// fenceErrors fences the error object key of a voided data key with an
// empty error object, create-only, so that a stalled writer cannot still
// put the records of a range that is read again (issue 21, item 9). One
// that is already there was written by a run that died before the data
// object (error objects go first: a data object implies its error object),
// and the range cannot be rendered again: its records are the range's
// next objects' too, so it is deleted and fenced. The fenced data key
// means no data object can ever stand beside it. It is the one object the
// sink deletes.
func (c *committer) fenceErrors(ctx context.Context, in state.Intent) error {
	if !c.errorObjects() {
		return nil
	}
	key, ok := c.p.r.Options.Names.ErrorsKeyOf(in.ObjectKey) // the key may be an earlier format's
	if !ok {
		return nil
	}
	for attempt := 0; ; attempt++ {
		_, err := c.p.r.Objects.Put(ctx, errorsObject(key), nil)
		var ce *s3store.ConflictError
		if !errors.As(err, &ce) {
			return err
		}
		if attempt == 2 {
			// A writer keeps putting it back: the next run tries again.
			return fmt.Errorf("fence the error object %s of the voided key %s: it was written again after being deleted: %w", key, in.ObjectKey, err)
		}
		c.p.log.Warn("deleting the error object of an unfinished object whose key is voided: the range's next objects hold its records",
			"key", key, "object", in.ObjectKey, "stored_bytes", ce.ExistingSize)
		if err := c.p.r.Objects.Delete(ctx, key); err != nil {
			return fmt.Errorf("delete the error object %s of the voided key %s (its records are the range's next objects'; s3:DeleteObject on the error prefix): %w", key, in.ObjectKey, err)
		}
	}
}

// voidReason is what a void marker says.
const voidReason = "the object could not be rendered again (messages deleted, or the format changed); its offsets are in other objects or gap markers"

// isFence reports whether an object of size bytes at key is a void's
// fence: the empty object of the key's format, which no rendering of a
// range with records is.
func (c *committer) isFence(key string, size int64) bool {
	n, ok := keys.ParseName(key)
	if !ok {
		return false
	}
	body, ok := batch.EmptyObject(n.Ext)
	return ok && int64(len(body)) == size
}

// isGapKey reports a gap (or hole, or skip) marker's key.
func isGapKey(key string) bool {
	n, ok := keys.ParseName(key)
	return ok && n.Gap
}

// gapCauseOf is the cause a gap marker's key carries: a hole or a skip by
// its extension, else retention (the marker's body may say re-created).
func gapCauseOf(key string) string {
	switch {
	case strings.HasSuffix(key, "."+keys.HoleExt):
		return CauseIggyHole
	case strings.HasSuffix(key, "."+keys.SkipExt):
		return CauseSkipped
	case strings.HasSuffix(key, "."+keys.TooLargeExt):
		return CauseTooLarge
	}
	return CauseRetention
}

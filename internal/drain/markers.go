package drain

import (
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

// markers writes the objects that hold no records: gap, void, generation
// and name markers, and the fences of voided keys. All are pure functions
// of what they mark, written create-only, so a repeated write meets the
// same bytes.
type markers struct{ p *partition }

// marker is the body of a gap or void marker.
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

func (mk *markers) putMarker(ctx context.Context, key string, m marker) (s3store.Result, error) {
	m.Stream, m.Topic, m.Partition = mk.p.bp.Stream, mk.p.bp.Topic, mk.p.bp.ID
	body, err := json.Marshal(m)
	if err != nil {
		return s3store.Result{}, err
	}
	return mk.p.r.Objects.Put(ctx, s3store.Object{Key: key, ContentType: "application/json"}, body)
}

func (mk *markers) putGapMarker(ctx context.Context, key string, first, last uint64, cause string) (s3store.Result, error) {
	return mk.putMarker(ctx, key, marker{FirstMissing: first, LastMissing: last, Cause: cause, Reason: gapReasons[cause]})
}

// putOnce writes a marker create-only, the one already there winning, and
// remembers it for the process.
func (mk *markers) putOnce(ctx context.Context, key, what string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = mk.p.r.Objects.Put(ctx, s3store.Object{Key: key, ContentType: "application/json"}, body)
	if err != nil && !errors.Is(err, s3store.ErrConflict) {
		return fmt.Errorf("write the %s %s: %w", what, key, err)
	}
	if m := mk.p.r.Marked; m != nil {
		m.keys.Store(key, struct{}{})
	}
	return nil
}

// void fences the key of an intent that will not be written: an empty
// object of its format goes there create-only, so a stalled writer can
// never still put the old object under it, and a void marker next to it
// tells readers and the audit that the key covers no offsets. If the key
// already holds an object, that object is the intent's, complete: exists.
func (mk *markers) void(ctx context.Context, in state.Intent) (size int64, exists bool, err error) {
	body, ok := fenceBody(in.ObjectKey)
	if !ok {
		mk.p.log.Warn("cannot fence an unfinished object of an unknown format; a stalled writer could still write it", "key", in.ObjectKey)
		return 0, false, nil
	}
	_, err = mk.p.r.Objects.Put(ctx, s3store.Object{Key: in.ObjectKey, ContentType: "application/octet-stream"}, body)
	var ce *s3store.ConflictError
	if errors.As(err, &ce) {
		return ce.ExistingSize, true, nil
	}
	if err != nil {
		return 0, false, err
	}
	if err := mk.fenceErrors(ctx, in); err != nil {
		return 0, false, err
	}
	vk, _ := keys.VoidMarker(in.ObjectKey)
	mk.p.log.Warn("an unfinished object cannot be rewritten; its key is voided and its offsets read again",
		"key", in.ObjectKey, "first", in.First, "last", in.Last, "marker", vk)
	_, err = mk.putMarker(ctx, vk, marker{Voided: in.ObjectKey, Reason: voidReason})
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
func (mk *markers) fenceErrors(ctx context.Context, in state.Intent) error {
	if !mk.p.errorObjects() {
		return nil
	}
	key, ok := mk.p.r.Options.Names.ErrorsKeyOf(in.ObjectKey) // the key may be an earlier format's
	if !ok {
		return nil
	}
	for attempt := 0; ; attempt++ {
		_, err := mk.p.r.Objects.Put(ctx, errorsObject(key), nil)
		var ce *s3store.ConflictError
		if !errors.As(err, &ce) {
			return err
		}
		if attempt == 2 {
			// A writer keeps putting it back: the next run tries again.
			return fmt.Errorf("fence the error object %s of the voided key %s: it was written again after being deleted: %w", key, in.ObjectKey, err)
		}
		mk.p.log.Warn("deleting the error object of an unfinished object whose key is voided: the range's next objects hold its records",
			"key", key, "object", in.ObjectKey, "stored_bytes", ce.ExistingSize)
		if err := mk.p.r.Objects.Delete(ctx, key); err != nil {
			return fmt.Errorf("delete the error object %s of the voided key %s (its records are the range's next objects'; s3:DeleteObject on the error prefix): %w", key, in.ObjectKey, err)
		}
	}
}

// abortUploads aborts what a dead run left of a multipart upload of key:
// its parts stay in the store (and are billed) until someone does (issue
// 21, item 13). Best effort, with a warning: a bucket lifecycle rule for
// incomplete uploads is the backstop (`poller check` says whether there is
// one).
func (mk *markers) abortUploads(ctx context.Context, key string) {
	if isGapKey(key) {
		return // markers are single PUTs
	}
	n, err := mk.p.r.Objects.AbortUploads(ctx, key)
	switch {
	case err != nil:
		mk.p.log.Warn("could not abort the multipart uploads a dead run left for the object; a bucket lifecycle rule for incomplete uploads removes them", "key", key, "error", err)
	case n > 0:
		mk.p.log.Info("aborted the multipart uploads a dead run left for the object", "key", key, "uploads", n)
	}
}

// voidReason is what a void marker says.
const voidReason = "the object could not be rendered again (messages deleted, or the format changed); its offsets are in other objects or gap markers"

// isFence reports whether an object of size bytes at key is a void's
// fence: the empty object of the key's format, which no rendering of a
// range with records is.
func isFence(key string, size int64) bool {
	body, ok := fenceBody(key)
	return ok && int64(len(body)) == size
}

// fenceBody is what fences key: the empty object of its format, or, for a
// unit's manifest, no bytes (which no manifest is).
func fenceBody(key string) ([]byte, bool) {
	n, ok := keys.ParseName(key)
	switch {
	case !ok:
		return nil, false
	case n.Manifest:
		return []byte{}, true
	}
	return batch.EmptyObject(n.Ext)
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

// errorsObject is how error objects are stored: JSON Lines, never compressed.
func errorsObject(key string) s3store.Object {
	return s3store.Object{Key: key, ContentType: batch.FormatJSONLines.ContentType()}
}

package drain

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Why offsets are missing, as gap markers say it.
const (
	reasonRetention = "deleted by Iggy (retention) before the sink read it"
	reasonRecreated = "deleted with the partition (it was re-created) before the sink wrote it"
)

// upload writes s under its intent's key, create-only, keeping the lease
// while it runs, and then gives s's accumulator back. An existing object
// with other bytes holds the same offsets (its key is its range): it is
// kept, reported and counted as written.
func (c *committer) upload(ctx context.Context, s *sealed) (Written, error) {
	defer s.done()
	key := c.st.Intent.ObjectKey
	w := Written{Key: key, First: s.first, Last: s.last, Gap: s.gap}
	if s.gap {
		c.p.log.Warn("gap: Iggy deleted messages before the sink read them", "first", s.first, "last", s.last, "marker", key)
	} else {
		w.Messages = s.last - s.first + 1
	}
	var res s3store.Result
	err := c.await(ctx, func(ctx context.Context) error {
		var err error
		switch {
		case s.gap:
			res, err = c.putGapMarker(ctx, key, s.first, s.last, reasonRetention)
		case s.acc == nil || s.acc.Spilled():
			res, err = c.stream(ctx, key, s.first, s.last)
		default:
			if err = c.p.hook(StepMidUpload); err == nil {
				res, err = c.put(ctx, key, s.acc.Bytes())
			}
		}
		return err
	})
	c.ps.Retries += uint64(res.Retries)
	w.Bytes, w.Existed = uint64(res.Bytes), res.Existed
	var ce *s3store.ConflictError
	if errors.As(err, &ce) {
		c.ps.Conflicts++
		c.p.log.Warn("the object already exists with other bytes; kept as it is (same offsets, rendered by another configuration or run)",
			"key", key, "stored_bytes", ce.ExistingSize, "rendered_bytes", ce.SentSize)
		w.Bytes, w.Existed = uint64(ce.ExistingSize), true
		return w, nil
	}
	return w, err
}

func (c *committer) object(key string) s3store.Object {
	o := &c.p.r.Options
	return s3store.Object{Key: key, ContentType: o.Records.Format.ContentType(), ContentEncoding: o.Compression.ContentEncoding()}
}

func (c *committer) put(ctx context.Context, key string, body []byte) (s3store.Result, error) {
	if z := c.p.r.Options.Compression; z != "" && z != batch.CompressionNone {
		var err error
		if c.zbuf, err = batch.Compress(c.zbuf[:0], body, z); err != nil {
			return s3store.Result{}, err
		}
		body = c.zbuf
	}
	return c.p.r.Objects.Put(ctx, c.object(key), body)
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
	Reason       string `json:"reason"`
}

func (c *committer) putMarker(ctx context.Context, key string, m marker) (s3store.Result, error) {
	m.Stream, m.Topic, m.Partition = c.p.bp.Stream, c.p.bp.Topic, c.p.bp.ID
	body, err := json.Marshal(m)
	if err != nil {
		return s3store.Result{}, err
	}
	return c.p.r.Objects.Put(ctx, s3store.Object{Key: key, ContentType: "application/json"}, body)
}

func (c *committer) putGapMarker(ctx context.Context, key string, first, last uint64, reason string) (s3store.Result, error) {
	return c.putMarker(ctx, key, marker{FirstMissing: first, LastMissing: last, Reason: reason})
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
	mk, _ := keys.VoidMarker(in.ObjectKey)
	c.p.log.Warn("an unfinished object cannot be rewritten; its key is voided and its offsets read again",
		"key", in.ObjectKey, "first", in.First, "last", in.Last, "marker", mk)
	_, err = c.putMarker(ctx, mk, marker{Voided: in.ObjectKey, Reason: "the object could not be rendered again (messages deleted, or the format changed); its offsets are in other objects or gap markers"})
	if errors.Is(err, s3store.ErrConflict) {
		err = nil
	}
	return 0, false, err
}

func isGapKey(key string) bool { return strings.HasSuffix(key, "."+keys.GapExt) }

package drain

import (
	"context"
	"fmt"
	"io"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
)

// missingError says Iggy no longer holds offsets First..Last (retention).
type missingError struct {
	First, Last uint64
	// Next is the first offset Iggy still has, and Timestamp its server time.
	Next, Timestamp uint64
}

func (e *missingError) Error() string {
	return fmt.Sprintf("offsets %d..%d are no longer in Iggy", e.First, e.Last)
}

// errorLines is what rendering an object left for its error object: how
// many records were rejected to it, and their lines when they fit in
// KeepLimit (else the error object is streamed by a render of its own).
type errorLines struct {
	rejected int
	body     []byte
	kept     bool
	// invalid counts the payloads the invalid-payload policy handled while
	// the object was streamed (see batch.ObjectWriter.InvalidPayloads).
	invalid uint64
	// conflicts counts error objects found holding other bytes (kept).
	conflicts uint64
}

// stream re-reads first..last from Iggy and streams the rendered object
// of the messages keep takes (all when keep is nil), so that an object of
// any size is written with bounded memory. A format that needs the
// messages twice (Parquet: its schema comes first) reads the range twice.
func (ow *objectWriter) stream(ctx context.Context, key string, first, last uint64, keep func(*batch.Message) bool) (s3store.Result, errorLines, error) {
	var el errorLines
	res, err := ow.p.r.Objects.Stream(ctx, ow.object(key), func(dst io.Writer) error {
		bw, err := batch.NewObjectWriter(dst, ow.enc, ow.comp)
		if err != nil {
			return err
		}
		bw.KeepErrors(max(ow.p.r.Options.KeepLimit, 1))
		if err := ow.passes(ctx, bw, first, last, keep); err != nil {
			return err
		}
		if err := bw.Close(); err != nil {
			return err
		}
		el.rejected, el.invalid = bw.Rejected(), bw.InvalidPayloads()
		el.body, el.kept = bw.ErrorBytes()
		return nil
	})
	return res, el, err
}

// streamErrors renders first..last for its error object alone and streams
// that to key; nothing is written when no record is rejected.
func (ow *objectWriter) streamErrors(ctx context.Context, key string, first, last uint64, keep func(*batch.Message) bool) (s3store.Result, error) {
	obj := errorsObject(key)
	obj.OmitEmpty = true
	return ow.p.r.Objects.Stream(ctx, obj, func(dst io.Writer) error {
		bw, err := batch.NewObjectWriter(io.Discard, ow.enc, batch.CompressionNone)
		if err != nil {
			return err
		}
		bw.StreamErrors(dst)
		if err := ow.passes(ctx, bw, first, last, keep); err != nil {
			return err
		}
		return bw.Close()
	})
}

// passes gives bw the range's messages that keep takes (all when keep is
// nil) as many times as its format needs: Observe on every pass but the
// last, Write on the last.
func (ow *objectWriter) passes(ctx context.Context, bw *batch.ObjectWriter, first, last uint64, keep func(*batch.Message) bool) error {
	n := bw.Passes()
	for pass := 1; pass <= n; pass++ {
		fn := bw.Write
		if pass < n {
			fn = bw.Observe
		}
		if keep != nil {
			all := fn
			fn = func(m *batch.Message) error {
				if !keep(m) {
					return nil
				}
				return all(m)
			}
		}
		if err := ow.render(ctx, first, last, pass == n, fn); err != nil {
			return err
		}
	}
	return nil
}

// render reads exactly first..last and hands each message to fn in order;
// writing says the pass writes the object (StepMidUpload is its hook point).
func (ow *objectWriter) render(ctx context.Context, first, last uint64, writing bool, fn func(*batch.Message) error) error {
	p := ow.p
	next := first
	var buf []batch.Message
	midDone := !writing
	sizer := newPollSizer(p.r.Options.MaxPollBytes, p.stream.BatchLength)
	for next <= last {
		count := min(uint64(sizer.count), last-next+1)
		var err error
		buf, _, err = p.conn.Poll(ctx, p.topic, p.info.ID, next, uint32(count), buf[:0])
		if tl := asTooLarge(err); tl != nil {
			if sizer.shrink(tl) {
				continue
			}
			return fmt.Errorf("re-reading offsets %d..%d: no object holds a message larger than max_poll_bytes (if it was lowered since, raise it back): %w", first, last, err)
		}
		if err != nil {
			return err
		}
		sizer.observe(buf)
		if len(buf) == 0 {
			return fmt.Errorf("re-reading offsets %d..%d: Iggy returned nothing at offset %d (the partition may have moved to another member)", first, last, next)
		}
		for i := range buf {
			m := &buf[i]
			if m.Offset < next || next > last {
				continue
			}
			if m.Offset > next {
				// Checked before the end of the range: when retention removed
				// all the rest, the first message found lies beyond it.
				return &missingError{First: next, Last: min(m.Offset-1, last), Next: m.Offset, Timestamp: m.Timestamp}
			}
			if err := fn(m); err != nil {
				return err
			}
			ow.renderedTS = m.Timestamp
			next++
		}
		if !midDone {
			midDone = true
			if err := p.hook(StepMidUpload); err != nil {
				return err
			}
		}
	}
	return nil
}

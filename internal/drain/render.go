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

// stream re-reads first..last from Iggy and streams the rendered object,
// so that an object of any size is written with bounded memory.
func (c *committer) stream(ctx context.Context, key string, first, last uint64) (s3store.Result, error) {
	return c.p.r.Objects.Stream(ctx, c.object(key), func(dst io.Writer) error {
		ow, err := batch.NewObjectWriter(dst, c.enc, c.p.r.Options.Compression)
		if err != nil {
			return err
		}
		if err := c.render(ctx, first, last, ow.Write); err != nil {
			return err
		}
		return ow.Close()
	})
}

// render reads exactly first..last and hands each message to fn in order.
func (c *committer) render(ctx context.Context, first, last uint64, fn func(*batch.Message) error) error {
	p := c.p
	next := first
	var buf []batch.Message
	midDone := false
	for next <= last {
		count := min(uint64(p.stream.BatchLength), last-next+1)
		var err error
		buf, _, err = p.conn.Poll(ctx, p.topic, p.info.ID, next, uint32(count), buf[:0])
		if err != nil {
			return err
		}
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

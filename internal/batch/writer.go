package batch

import (
	"errors"
	"fmt"
	"io"
)

// flushAt is how much rendered text ObjectWriter gathers before it writes
// on, so that a pipe or compressor sees few large writes.
const flushAt = 64 << 10

// ErrClosed is returned by ObjectWriter.Write after Close.
var ErrClosed = errors.New("batch: object writer closed")

// ObjectWriter streams one object, header, records and trailer, through
// optional compression into an io.Writer (e.g. a multipart upload pipe), so
// that an object larger than memory can be written. The bytes equal those an
// Accumulator would hold for the same messages.
type ObjectWriter struct {
	enc     *Encoder
	w       io.Writer
	zw      io.WriteCloser // nil without compression
	release func()
	buf     []byte
	n       int
	err     error
	closed  bool
}

// NewObjectWriter returns a writer of one object into w; compression is
// "none" (or ""), "gzip" or "zstd".
func NewObjectWriter(w io.Writer, e *Encoder, compression Compression) (*ObjectWriter, error) {
	o := &ObjectWriter{enc: e, w: w}
	if compression != "" && compression != CompressionNone {
		zw, release, err := newCompressor(w, compression)
		if err != nil {
			return nil, err
		}
		o.zw, o.w, o.release = zw, zw, release
	}
	o.buf = e.AppendHeader(make([]byte, 0, flushAt+flushAt/4))
	return o, nil
}

// Write renders m as the object's next record. After an error every later
// call returns that error.
func (o *ObjectWriter) Write(m *Message) error {
	if o.closed {
		return ErrClosed
	}
	if o.err != nil {
		return o.err
	}
	out, err := o.enc.AppendRecord(o.buf, m, o.n == 0)
	if err != nil {
		o.err = err
		return err
	}
	o.buf = out
	o.n++
	if len(o.buf) >= flushAt {
		return o.flush()
	}
	return nil
}

func (o *ObjectWriter) flush() error {
	if len(o.buf) == 0 {
		return nil
	}
	if _, err := o.w.Write(o.buf); err != nil {
		o.err = fmt.Errorf("batch: write object: %w", err)
		return o.err
	}
	o.buf = o.buf[:0]
	return nil
}

// Close writes the trailer, flushes, and closes the compressor; it does not
// close the underlying writer.
func (o *ObjectWriter) Close() error {
	if o.closed {
		return ErrClosed
	}
	o.closed = true
	if o.err == nil {
		o.buf = o.enc.AppendTrailer(o.buf)
		_ = o.flush()
	}
	if o.zw != nil {
		if err := o.zw.Close(); err != nil && o.err == nil {
			o.err = fmt.Errorf("batch: finish compression: %w", err)
		}
		o.release()
		o.zw = nil
	}
	return o.err
}

// Len is the number of records written.
func (o *ObjectWriter) Len() int { return o.n }

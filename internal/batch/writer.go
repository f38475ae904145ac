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
//
// A Parquet object needs the messages twice (Passes is 2): Observe each
// one in order, then Write each one in the same order; the file goes to the
// io.Writer during the second pass, a row group at a time. For the other
// formats Passes is 1 and Observe does nothing.
//
// Under invalid_payload "error_object" the lines of the error object are
// kept in memory (see KeepErrors, StreamErrors, ErrorBytes).
type ObjectWriter struct {
	enc     *Encoder
	w       io.Writer
	zw      io.WriteCloser // nil without compression
	release func()
	buf     []byte
	n       int
	err     error
	closed  bool

	pq      *pqFile // format parquet
	begun   bool    // the Parquet file's second pass has started
	scratch []byte  // a prepared Parquet payload

	rejected int
	invalid  uint64 // payloads the invalid-payload policy handled, in the write pass
	errs     []byte
	errW     io.Writer
	errLimit int64
	dropped  bool
}

// NewObjectWriter returns a writer of one object into w; compression is
// "none" (or ""), "gzip" or "zstd" — only "none" for format parquet, whose
// pages carry their own compression.
func NewObjectWriter(w io.Writer, e *Encoder, compression Compression) (*ObjectWriter, error) {
	o := &ObjectWriter{enc: e, w: w}
	if e.format == fmtParquet {
		if compression != "" && compression != CompressionNone {
			return nil, fmt.Errorf("batch: a Parquet object is not compressed as a whole (compression %q); its pages are", compression)
		}
		f, err := newPQFile(e)
		if err != nil {
			return nil, err
		}
		f.reset()
		o.pq = f
		return o, nil
	}
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

// Passes is how many times the messages must be given: 2 for Parquet
// (Observe each, then Write each), 1 for the other formats (Write each).
func (o *ObjectWriter) Passes() int {
	if o.pq != nil {
		return 2
	}
	return 1
}

// KeepErrors bounds the error-object lines kept in memory to limit bytes
// (0: no bound); past it they are dropped and ErrorBytes reports so, while
// Rejected goes on counting.
func (o *ObjectWriter) KeepErrors(limit int64) { o.errLimit = limit }

// StreamErrors writes the error-object lines to w as they are made, in
// writes of about 64 KiB, instead of keeping them; Close writes the rest.
func (o *ObjectWriter) StreamErrors(w io.Writer) { o.errW = w }

// Observe is the first pass of a two-pass (Parquet) object: it learns the
// schema from m. It does nothing for the other formats.
func (o *ObjectWriter) Observe(m *Message) error {
	if o.pq == nil {
		return nil
	}
	if o.closed {
		return ErrClosed
	}
	if o.err != nil {
		return o.err
	}
	if o.begun {
		o.err = errors.New("batch: Observe after Write")
		return o.err
	}
	p, err := o.enc.parquetPayload(o.scratch[:0], m)
	o.scratch = p
	switch {
	case err == ErrRejected:
		return nil // not in the file: no influence on its schema
	case err != nil:
		o.err = err
		return err
	}
	if err := o.pq.observe(p); err != nil {
		o.err = err
	}
	return o.err
}

// Write renders m as the object's next record (or, under "error_object",
// error line). After an error every later call returns that error.
func (o *ObjectWriter) Write(m *Message) error {
	before := o.enc.invalid
	err := o.write(m)
	o.invalid += o.enc.invalid - before
	return err
}

func (o *ObjectWriter) write(m *Message) error {
	if o.closed {
		return ErrClosed
	}
	if o.err != nil {
		return o.err
	}
	if o.pq != nil {
		o.err = o.writeParquet(m)
		return o.err
	}
	out, err := o.enc.AppendRecord(o.buf, m, o.n == 0)
	if err == ErrRejected {
		o.err = o.reject(m, m.Payload, invalidReason(o.enc.rejAt, len(m.Payload)))
		return o.err
	}
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

func (o *ObjectWriter) writeParquet(m *Message) error {
	if !o.begun {
		o.begun = true
		if err := o.pq.begin(o.w); err != nil {
			return err
		}
	}
	p, err := o.enc.parquetPayload(o.scratch[:0], m)
	o.scratch = p
	switch {
	case err == ErrRejected:
		return o.reject(m, m.Payload, invalidReason(o.enc.rejAt, len(m.Payload)))
	case err != nil:
		return err
	}
	reason, err := o.pq.write(m, p)
	switch {
	case err != nil:
		return err
	case reason != "":
		o.invalid++ // as the Accumulator's checkPinned counts it
		return o.reject(m, p, reason)
	}
	o.n++
	return nil
}

// reject adds m's error line, payload being the payload that was rejected.
func (o *ObjectWriter) reject(m *Message, payload []byte, reason string) error {
	o.rejected++
	if o.dropped {
		return nil
	}
	o.errs = o.enc.lines.append(o.errs, m, payload, reason)
	switch {
	case o.errW != nil && len(o.errs) >= flushAt:
		return o.flushErrors()
	case o.errW == nil && o.errLimit > 0 && int64(len(o.errs)) > o.errLimit:
		o.errs, o.dropped = nil, true
	}
	return nil
}

func (o *ObjectWriter) flushErrors() error {
	if len(o.errs) == 0 || o.errW == nil {
		return nil
	}
	if _, err := o.errW.Write(o.errs); err != nil {
		return fmt.Errorf("batch: write error object: %w", err)
	}
	o.errs = o.errs[:0]
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

// Close writes the trailer (a Parquet file's last row group and footer),
// flushes, and closes the compressor; it does not close the underlying
// writer (nor the one given to StreamErrors).
func (o *ObjectWriter) Close() error {
	if o.closed {
		return ErrClosed
	}
	o.closed = true
	if o.err == nil && o.pq != nil {
		if !o.begun {
			o.begun = true
			o.err = o.pq.begin(o.w)
		}
		if o.err == nil {
			o.err = o.pq.close()
		}
	}
	if o.err == nil && o.pq == nil {
		o.buf = o.enc.AppendTrailer(o.buf)
		_ = o.flush()
	}
	if o.err == nil {
		o.err = o.flushErrors()
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

// Len is the number of records written to the object (rows, for Parquet).
func (o *ObjectWriter) Len() int { return o.n }

// Rejected is the number of records written to the error object.
func (o *ObjectWriter) Rejected() int { return o.rejected }

// InvalidPayloads is the number of payloads the invalid-payload policy
// handled (kept as base64 or rejected) while the object was written, as
// Encoder.InvalidPayloads counts them for an Accumulator.
func (o *ObjectWriter) InvalidPayloads() uint64 { return o.invalid }

// ErrorBytes returns the error object's lines kept in memory (nil when no
// record was rejected); ok is false when they outgrew KeepErrors and were
// dropped: the error object must then be made again, with StreamErrors.
func (o *ObjectWriter) ErrorBytes() (lines []byte, ok bool) {
	if o.dropped {
		return nil, false
	}
	if len(o.errs) == 0 {
		return nil, true
	}
	return o.errs, true
}

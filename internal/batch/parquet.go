package batch

import (
	"errors"
	"fmt"
	"io"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// How a Parquet object is made: an object's records pass through the file
// twice (pass 1 fixes the inferred schema, pass 2 writes rows), so the
// Accumulator keeps the messages of an object in memory — their payloads
// already validated, compacted and transformed — and writes the file when
// asked for its bytes, while the ObjectWriter of a large object is fed the
// range twice (Passes, Observe, Write). Both prepare a payload with the
// same code and hand it to a pqFile, so both give the same bytes, and the
// same error object.

var errParquetRecord = errors.New("batch: a Parquet object is not made record by record (use an Accumulator or ObjectWriter)")

// parquetOptions checks and keeps the file options of format parquet.
func (e *Encoder) parquetOptions(p Partition, o Options) error {
	po := &parquet.Options{
		Payload:         string(o.Schema),
		IncludeMetadata: o.IncludeMetadata,
		IncludeHeaders:  o.IncludeHeaders,
		Schema:          o.Parquet.Schema,
		KeepExtra:       o.Parquet.KeepExtra,
		Compression:     o.Parquet.Compression,
		RowGroupBytes:   o.Parquet.RowGroupBytes,
		PageBytes:       o.Parquet.PageBytes,
		StatsColumns:    o.Parquet.StatsColumns,
	}
	if o.Parquet.Conform != nil && e.schema == schJSON && po.Schema == nil {
		if !e.errorObject && !e.failInvalid {
			return errors.New(`batch: conforming to a table's types needs invalid_payload "error_object" or "fail": a record that does not fit them cannot be kept as base64`)
		}
		po.Conform = o.Parquet.Conform(p.Stream, p.Topic)
	}
	if _, err := parquet.NewEncoder(*po); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	if po.Schema != nil {
		if !e.errorObject && !e.failInvalid {
			return errors.New(`batch: a pinned Parquet schema needs invalid_payload "error_object" or "fail": a record that does not fit it cannot be kept as base64`)
		}
		c, err := parquet.NewChecker(*po)
		if err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		e.checker = c
	}
	e.pq = po
	return nil
}

// parquetPayload appends to dst the payload the Parquet file gets for m:
// under schema json the payload validated, compacted and transformed (a
// payload that is not JSON follows invalid_payload: base64 makes it a JSON
// string, fail an *InvalidPayloadError, error_object ErrRejected); under
// text the payload as sent; under raw, proto, flatbuffer and avro the
// payload as sent, or transformed when it is a JSON object — as the raw
// format renders payloads.
func (e *Encoder) parquetPayload(dst []byte, m *Message) ([]byte, error) {
	if e.schema == schText {
		return append(dst, m.Payload...), nil
	}
	return e.appendRawPayload(dst, m)
}

// checkPinned counts (or, under fail, refuses) a prepared payload that a
// pinned schema will reject; the file decides the same way when written.
func (e *Encoder) checkPinned(m *Message, payload []byte) error {
	if e.checker == nil {
		return nil
	}
	err := e.checker.Check(payload)
	if err == nil {
		return nil
	}
	if e.failInvalid {
		return &InvalidPayloadError{Stream: e.part.Stream, Topic: e.part.Topic, Partition: e.part.ID, Offset: m.Offset, Err: err}
	}
	e.invalid++
	return nil
}

// noteHeaders counts malformed user headers as the JSON formats do (the
// Parquet row then has null headers).
func (e *Encoder) noteHeaders(m *Message) {
	if e.headers && len(m.Headers) > 0 && e.hs.parse(m.Headers) != nil {
		e.badHeaders++
	}
}

// pqFile writes one Parquet file from prepared payloads; it owns its
// scratch, so an Accumulator can write its file on another goroutine than
// the one that fills the next Accumulator.
type pqFile struct {
	enc   *parquet.Encoder
	src   parquet.Source
	fail  bool // invalid_payload "fail": a rejected record ends the object
	part  Partition
	hdrs  bool
	pairs HeaderPairs
	hbuf  []parquet.Header
	rec   parquet.Record
}

func newPQFile(e *Encoder) (*pqFile, error) {
	enc, err := parquet.NewEncoder(*e.pq)
	if err != nil {
		return nil, err
	}
	return &pqFile{
		enc: enc, src: parquet.Source{Stream: e.part.Stream, Topic: e.part.Topic, Partition: e.part.ID},
		fail: e.failInvalid, part: e.part, hdrs: e.headers,
	}, nil
}

func (f *pqFile) reset() { f.enc.Reset(f.src) }

// observe is pass 1 for one prepared payload (none for a rejected one).
func (f *pqFile) observe(payload []byte) error { return f.enc.Observe(payload) }

func (f *pqFile) begin(w io.Writer) error { return f.enc.Begin(w) }

// write is pass 2 for m, whose prepared payload is payload: it returns the
// reason the file rejected the record ("" when it became a row), or, under
// invalid_payload "fail", an *InvalidPayloadError.
func (f *pqFile) write(m *Message, payload []byte) (string, error) {
	f.rec = parquet.Record{Offset: m.Offset, Timestamp: m.Timestamp, Payload: payload}
	if f.hdrs && len(m.Headers) > 0 {
		if pairs, err := f.pairs.Decode(m.Headers); err == nil {
			f.hbuf = f.hbuf[:0]
			for _, p := range pairs {
				f.hbuf = append(f.hbuf, parquet.Header(p))
			}
			f.rec.Headers = f.hbuf
		}
	}
	err := f.enc.Write(&f.rec)
	f.rec = parquet.Record{}
	if err == nil {
		return "", nil
	}
	var re *parquet.RecordError
	if !errors.As(err, &re) {
		return "", err
	}
	if f.fail {
		return "", &InvalidPayloadError{Stream: f.part.Stream, Topic: f.part.Topic, Partition: f.part.ID, Offset: m.Offset, Err: re.Err}
	}
	return re.Err.Error(), nil
}

func (f *pqFile) close() error { return f.enc.Close() }

// pqRecord is one message an Accumulator keeps for its Parquet file: its
// headers and prepared payload live in the accumulator's arena.
type pqRecord struct {
	offset, ts uint64
	h0, p0, p1 int // arena[h0:p0] headers, arena[p0:p1] payload
	// invalidAt ≥ 0: the payload is not JSON from that byte and is kept as
	// sent, for the error object.
	invalidAt int
}

// pqStore is the Parquet side of an Accumulator.
type pqStore struct {
	recs  []pqRecord
	arena []byte
	file  *pqFile
	lines errorLines
	out   []byte // the built file
	errs  []byte // the built error object
	built bool
	err   error
}

// addParquet keeps m for the Parquet file (its size, for rotation and the
// keep limit, is its payload and header bytes: the file's input).
func (a *Accumulator) addParquet(m *Message) (bool, error) {
	recLen := int64(len(m.Payload) + len(m.Headers))
	if (a.n > 0 || a.part) && a.rot.MaxBytes > 0 && a.size+recLen > a.rot.MaxBytes {
		a.rejected = true
		return false, nil
	}
	s := a.pq
	target := s.arena
	if a.spilled {
		target = a.scratch[:0]
	}
	h0 := len(target)
	target = append(target, m.Headers...)
	p0 := len(target)
	out, err := a.enc.parquetPayload(target, m)
	invalidAt := -1
	switch {
	case err == ErrRejected:
		invalidAt = a.enc.rejAt
		out = append(target, m.Payload...)
	case err != nil:
		return false, err
	default:
		if err := a.enc.checkPinned(m, out[p0:]); err != nil {
			return false, err
		}
	}
	a.enc.noteHeaders(m)
	a.size += recLen
	a.note(m)
	s.built = false
	switch {
	case a.spilled:
		a.scratch = out[:0]
	case a.size > a.keep:
		a.spill(0)
		a.scratch = out[:0]
	default:
		s.arena = out
		s.recs = append(s.recs, pqRecord{offset: m.Offset, ts: m.Timestamp, h0: h0, p0: p0, p1: len(out), invalidAt: invalidAt})
	}
	return true, nil
}

// build writes the kept records as the Parquet file and its error object.
func (a *Accumulator) build() error {
	s := a.pq
	if s.built {
		return s.err
	}
	s.built = true
	if s.file == nil {
		f, err := newPQFile(a.enc)
		if err != nil {
			s.err = err
			return err
		}
		s.file = f
		s.lines = newErrorLines(a.enc.part, a.enc.headers)
	}
	s.err = s.write()
	return s.err
}

func (s *pqStore) write() error {
	f := s.file
	f.reset()
	for i := range s.recs {
		r := &s.recs[i]
		if r.invalidAt < 0 {
			if err := f.observe(s.arena[r.p0:r.p1]); err != nil {
				return err
			}
		}
	}
	out := appendWriter{b: s.out[:0]}
	s.errs = s.errs[:0]
	if err := f.begin(&out); err != nil {
		return err
	}
	var m Message
	for i := range s.recs {
		r := &s.recs[i]
		m = Message{Offset: r.offset, Timestamp: r.ts, Headers: s.arena[r.h0:r.p0], Payload: s.arena[r.p0:r.p1]}
		if r.invalidAt >= 0 {
			s.errs = s.lines.append(s.errs, &m, m.Payload, invalidReason(r.invalidAt, len(m.Payload)))
			continue
		}
		reason, err := f.write(&m, m.Payload)
		if err != nil {
			return err
		}
		if reason != "" {
			s.errs = s.lines.append(s.errs, &m, m.Payload, reason)
		}
	}
	err := f.close()
	s.out = out.b
	return err
}

func (s *pqStore) reset() {
	s.recs = s.recs[:0]
	s.arena = s.arena[:0]
	s.built = false
	s.err = nil
}

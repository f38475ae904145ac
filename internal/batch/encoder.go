package batch

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

type formatKind uint8

const (
	fmtLines formatKind = iota
	fmtArray
	fmtRaw
	fmtParquet
)

type schemaKind uint8

const (
	schJSON schemaKind = iota
	schText
	schBinary // raw, proto, flatbuffer, avro: JSON if it parses, else base64
)

// Encoder renders the messages of one partition as framed records. It keeps
// scratch buffers between calls, so it is not safe for concurrent use.
type Encoder struct {
	part        Partition
	format      formatKind
	schema      schemaKind
	meta        bool
	headers     bool
	failInvalid bool
	errorObject bool // invalid_payload "error_object": AppendRecord returns ErrRejected
	transformer Transformer
	members     MemberTransformer // the transformer, when it takes the members the scanner found

	// metaTail is the constant part of the metadata after the timestamp:
	// `","stream":"…","topic":"…","partition_id":N`.
	metaTail []byte

	sc jsonscan.Scanner
	hs headerSet

	// The last header bytes seen and their rendering (see renderHeaders).
	hdrRaw  []byte
	hdrJSON []byte
	hdrOK   bool
	hdrBad  bool

	tbuf []byte // transformer output
	cbuf []byte // validity probe for raw-format payloads

	// The last rendered timestamp second: messages of a batch usually share
	// it, so its text is reused.
	tsSec  uint64
	tsText [20]byte
	tsOK   bool

	invalid    uint64
	badHeaders uint64

	// rejAt is where the payload AppendRecord last rejected stops being JSON.
	rejAt int
	// lines renders error-object lines (error_object).
	lines errorLines

	// pq holds the Parquet file options (format parquet only); checker
	// decides, as the file will, which payloads a pinned schema rejects.
	pq      *parquet.Options
	checker *parquet.Checker
}

// NewEncoder returns an encoder for partition p. It fails on an unknown
// format, schema or invalid-payload policy.
func NewEncoder(p Partition, o Options) (*Encoder, error) {
	e := &Encoder{
		part:        p,
		meta:        o.IncludeMetadata,
		headers:     o.IncludeHeaders,
		transformer: o.Transformer,
	}
	e.sc.MaxDepth = o.MaxJSONDepth
	if mt, ok := o.Transformer.(MemberTransformer); ok {
		e.members = mt
		e.sc.Record = true
	}
	switch o.Format {
	case FormatJSONLines:
		e.format = fmtLines
	case FormatJSONArray:
		e.format = fmtArray
	case FormatRaw:
		e.format = fmtRaw
	case FormatParquet:
		e.format = fmtParquet
	default:
		return nil, fmt.Errorf("batch: unknown output format %q (accepted: json_lines, json_array, raw, parquet)", o.Format)
	}
	switch o.Schema {
	case SchemaJSON:
		e.schema = schJSON
	case SchemaText:
		e.schema = schText
	case SchemaRaw, SchemaProto, SchemaFlatbuffer, SchemaAvro:
		e.schema = schBinary
	default:
		return nil, fmt.Errorf("batch: unknown schema %q (accepted: json, text, raw, proto, flatbuffer, avro)", o.Schema)
	}
	switch o.InvalidPayload {
	case "", InvalidBase64:
	case InvalidFail:
		e.failInvalid = true
	case InvalidErrorObject:
		e.errorObject = true
	default:
		return nil, fmt.Errorf("batch: unknown invalid_payload %q (accepted: base64, fail, error_object)", o.InvalidPayload)
	}
	e.lines = newErrorLines(p, o.IncludeHeaders)
	if e.format == fmtParquet {
		if err := e.parquetOptions(p, o); err != nil {
			return nil, err
		}
	}
	t := []byte(`","stream":`)
	t = jsonscan.AppendString(t, []byte(p.Stream))
	t = append(t, `,"topic":`...)
	t = jsonscan.AppendString(t, []byte(p.Topic))
	t = append(t, `,"partition_id":`...)
	e.metaTail = strconv.AppendUint(t, uint64(p.ID), 10)
	return e, nil
}

// AppendHeader appends the bytes that open an object.
func (e *Encoder) AppendHeader(dst []byte) []byte {
	if e.format == fmtArray {
		return append(dst, '[')
	}
	return dst
}

// AppendTrailer appends the bytes that close an object.
func (e *Encoder) AppendTrailer(dst []byte) []byte {
	if e.format == fmtArray {
		return append(dst, ']')
	}
	return dst
}

// InvalidPayloads counts the payloads kept as base64 because they were not
// valid JSON under schema json, or (error_object) rejected to the error
// object: not valid JSON, or, by an Accumulator, not fitting a pinned
// Parquet schema.
func (e *Encoder) InvalidPayloads() uint64 { return e.invalid }

// MalformedHeaders counts messages whose user-header bytes did not parse;
// their records are written without a headers field.
func (e *Encoder) MalformedHeaders() uint64 { return e.badHeaders }

// AppendRecord appends message m's framed record to dst: for json_array a
// leading ',' unless first, for json_lines a trailing '\n'. On error dst is
// returned unchanged; ErrRejected (invalid_payload "error_object") means
// m's record belongs in the error object (AppendErrorLine renders it).
// Parquet records are not framed one by one: use an Accumulator or an
// ObjectWriter.
func (e *Encoder) AppendRecord(dst []byte, m *Message, first bool) ([]byte, error) {
	if e.format == fmtParquet {
		return dst, errParquetRecord
	}
	if e.format == fmtRaw {
		out, err := e.appendRawPayload(dst, m)
		if err != nil {
			return dst, err
		}
		return out, nil
	}
	out := dst
	badHeaders := e.badHeaders
	if e.format == fmtArray && !first {
		out = append(out, ',')
	}
	out = append(out, '{')
	comma := false
	if e.meta {
		out = append(out, `"offset":`...)
		out = strconv.AppendUint(out, m.Offset, 10)
		out = append(out, `,"timestamp":"`...)
		out = e.appendTimestamp(out, m.Timestamp)
		out = append(out, e.metaTail...)
		comma = true
	}
	if e.headers && len(m.Headers) > 0 {
		e.renderHeaders(m.Headers)
		if e.hdrBad {
			// A message is worth more than its headers: keep the record and
			// count the loss rather than stop the partition.
			e.badHeaders++
		} else {
			if comma {
				out = append(out, ',')
			}
			out = append(out, `"headers":`...)
			out = append(out, e.hdrJSON...)
			comma = true
		}
	}
	if comma {
		out = append(out, ',')
	}
	out = append(out, `"payload":`...)
	out, err := e.appendJSONPayload(out, m)
	if err != nil {
		e.badHeaders = badHeaders // no record was written
		return dst, err
	}
	out = append(out, '}')
	if e.format == fmtLines {
		out = append(out, '\n')
	}
	return out, nil
}

// renderHeaders renders raw into e.hdrJSON (or sets e.hdrBad). Producers
// often send the same headers on every message, so the last rendering is
// reused while the bytes repeat.
func (e *Encoder) renderHeaders(raw []byte) {
	if e.hdrOK && bytes.Equal(raw, e.hdrRaw) {
		return
	}
	e.hdrRaw = append(e.hdrRaw[:0], raw...)
	e.hdrJSON = e.hdrJSON[:0]
	e.hdrOK = true
	e.hdrBad = e.hs.parse(raw) != nil
	if !e.hdrBad {
		e.hdrJSON = e.hs.appendObject(e.hdrJSON)
	}
}

func (e *Encoder) appendTimestamp(dst []byte, micros uint64) []byte {
	sec := micros / 1_000_000
	if !e.tsOK || sec != e.tsSec {
		// Every rendering, the out-of-range fallback included, is 20 bytes.
		appendRFC3339Seconds(e.tsText[:0], micros)
		e.tsSec, e.tsOK = sec, true
	}
	return append(dst, e.tsText[:]...)
}

// appendJSONPayload renders the payload as a JSON value per schema.
func (e *Encoder) appendJSONPayload(dst []byte, m *Message) ([]byte, error) {
	switch e.schema {
	case schText:
		return jsonscan.AppendString(dst, m.Payload), nil
	case schJSON:
		return e.appendSchemaJSON(dst, m)
	}
	start := len(dst)
	out, ok, _ := e.sc.AppendCompact(dst, m.Payload)
	if !ok {
		return jsonscan.AppendBase64(dst, m.Payload), nil
	}
	if e.transformer != nil && out[start] == '{' {
		return e.transform(out, start, out[start:], m)
	}
	return out, nil
}

// appendSchemaJSON handles schema json: the payload validated and
// compacted, or the invalid-payload policy.
func (e *Encoder) appendSchemaJSON(dst []byte, m *Message) ([]byte, error) {
	if m.prepared {
		return append(dst, m.Payload...), nil
	}
	start := len(dst)
	out, ok, at := e.sc.AppendCompact(dst, m.Payload)
	if !ok {
		if e.failInvalid {
			return dst, &InvalidPayloadError{
				Stream: e.part.Stream, Topic: e.part.Topic, Partition: e.part.ID, Offset: m.Offset,
				Err: fmt.Errorf("%w (at byte %d of %d)", ErrInvalidJSON, at, len(m.Payload)),
			}
		}
		e.invalid++
		if e.errorObject {
			e.rejAt = at
			return dst, ErrRejected
		}
		return jsonscan.AppendBase64(dst, m.Payload), nil
	}
	if e.transformer != nil {
		return e.transform(out, start, out[start:], m)
	}
	return out, nil
}

// RecordMembers has PayloadJSON note the top-level members of the
// payloads it returns (PayloadMembers), so that a caller finds a member
// without reading the payload again.
func (e *Encoder) RecordMembers() { e.sc.Record = true }

// PayloadMembers are the top-level members of the payload the last
// PayloadJSON returned, by offsets into it, when RecordMembers was called
// and no transform rewrote it; nil otherwise.
func (e *Encoder) PayloadMembers() []jsonscan.Member {
	if !e.sc.Record || e.transformer != nil {
		return nil
	}
	return e.sc.Members
}

// PayloadJSON appends m's payload as the records hold it: compact JSON,
// transformed. It reports false when the payload is not JSON or a
// transform refuses it (the record then follows the invalid-payload
// policy). It leaves the encoder's counters alone, so that it may be called
// for a message beside AppendRecord (the path template's payload fields
// are read from it).
func (e *Encoder) PayloadJSON(dst []byte, m *Message) ([]byte, bool) {
	start := len(dst)
	out, ok, _ := e.sc.AppendCompact(dst, m.Payload)
	if !ok {
		return dst, false
	}
	if e.transformer == nil {
		return out, true
	}
	out, err := e.transform(out, start, out[start:], m)
	return out, err == nil
}

// appendRawPayload renders the raw format: payload bytes only. Schema json
// payloads are compacted (an invalid one follows the invalid-payload policy
// and, when kept, is written as its base64 JSON string so that the object
// stays a sequence of JSON values).
func (e *Encoder) appendRawPayload(dst []byte, m *Message) ([]byte, error) {
	switch e.schema {
	case schJSON:
		return e.appendSchemaJSON(dst, m)
	case schBinary:
		if e.transformer != nil && len(m.Payload) > 0 {
			var ok bool
			e.cbuf, ok, _ = e.sc.AppendCompact(e.cbuf[:0], m.Payload)
			if ok && e.cbuf[0] == '{' {
				return e.transform(dst, len(dst), e.cbuf, m)
			}
		}
	}
	return append(dst, m.Payload...), nil
}

// transform runs the Transformer on payload — valid, compact JSON, which
// may alias dst[start:] — and writes its output at dst[start:]. The
// Transformer's contract is valid, compact output (internal/transform
// fuzzes exactly that), so it is not scanned a second time here; a
// non-JSON start or end byte is still refused, as a cheap guard.
func (e *Encoder) transform(dst []byte, start int, payload []byte, m *Message) ([]byte, error) {
	var err error
	if e.members != nil && len(e.sc.Members) > 0 {
		// The scan that validated the payload also split it into members.
		e.tbuf, err = e.members.TransformMembers(e.tbuf[:0], payload, e.sc.Members, e.part.Stream, e.part.Topic, e.part.ID, m.Offset, m.Timestamp)
	} else {
		e.tbuf, err = e.transformer.Transform(e.tbuf[:0], payload, e.part.Stream, e.part.Topic, e.part.ID, m.Offset, m.Timestamp)
	}
	if err != nil {
		return dst[:start], &TransformError{Stream: e.part.Stream, Topic: e.part.Topic, Partition: e.part.ID, Offset: m.Offset, Err: err}
	}
	if !plausibleJSON(e.tbuf) {
		return dst[:start], &TransformError{
			Stream: e.part.Stream, Topic: e.part.Topic, Partition: e.part.ID, Offset: m.Offset,
			Err: fmt.Errorf("transformer output is not JSON (%d bytes)", len(e.tbuf)),
		}
	}
	return append(dst[:start], e.tbuf...), nil
}

// plausibleJSON checks the first and last bytes of a JSON value.
func plausibleJSON(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	first, last := b[0], b[len(b)-1]
	switch first {
	case '{':
		return last == '}'
	case '[':
		return last == ']'
	case '"':
		return len(b) >= 2 && last == '"'
	}
	return first == '-' || first >= '0' && first <= '9' || first == 't' || first == 'f' || first == 'n'
}

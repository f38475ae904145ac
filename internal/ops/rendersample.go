package ops

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fields"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// maxRenderLine is the longest input line Render accepts (Iggy's largest
// message is 64 MB by default; a sample rarely comes close).
const maxRenderLine = 64 << 20

// RenderOptions say how Render reads its input and which partition the
// messages belong to.
type RenderOptions struct {
	// Envelope: every line is a JSON object {"offset", "timestamp",
	// "headers", "payload" or "payload_base64"} instead of a bare payload.
	Envelope bool
	// Stream and Topic default to the configuration's first stream and
	// its first topic.
	Stream, Topic string
	Partition     uint32
	// FirstOffset numbers bare lines (and envelopes without an offset).
	FirstOffset uint64
	// Time is the server timestamp of bare lines; zero means now, to the second.
	Time time.Time
	// Errors receives the object's error object (invalid_payload =
	// "error_object"): the records rejected to it, as JSON Lines. Nil
	// discards it (RenderResult still counts them).
	Errors io.Writer
	// Value picks, under a path template with payload fields, whose
	// object is rendered: the value's folder segment as the key has it
	// (several fields' joined by "/"). Empty: the first message's.
	Value string
}

// ValueRecords is how many of the messages a value holds.
type ValueRecords struct {
	Value   string
	Records int
}

// RenderResult describes the object Render wrote.
type RenderResult struct {
	Key      string // the object's key in the bucket
	Messages int
	Bytes    int // as stored (after compression)
	// Objects is how many objects the sink would cut these messages into
	// (max_file_size / max_messages_per_file), or under a path template
	// with payload fields how many units (max_partition_values too);
	// Render writes them as one.
	Objects int
	// InvalidPayloads counts payloads kept as base64 (schema json, not JSON)
	// or, under "error_object", rejected to the error object.
	InvalidPayloads uint64
	// Rejected is the number of records in the error object, and ErrorsKey
	// its key ("" when there is none).
	Rejected  int
	ErrorsKey string
	// Values are the messages' values, in the order of their first
	// message, under a path template with payload fields (the unit's
	// objects, of which Render wrote Value's); nil otherwise.
	Values []ValueRecords
	Value  string
}

// Render reads messages from in, one per line, and writes to out the object
// the sink would write for them with cfg: format, compression, transforms,
// schema, metadata and headers, byte for byte. No Iggy or S3 is involved.
func Render(cfg *config.Config, in io.Reader, out io.Writer, o RenderOptions) (RenderResult, error) {
	var res RenderResult
	if len(cfg.Streams) == 0 || len(cfg.Streams[0].Topics) == 0 {
		return res, fmt.Errorf("render: the configuration names no stream and topic")
	}
	st := cfg.Streams[0]
	if o.Stream == "" {
		o.Stream = st.Stream
	}
	if o.Topic == "" {
		o.Topic = st.Topics[0]
	}
	for _, s := range cfg.Streams {
		if s.Stream == o.Stream {
			st = s // the schema is per stream
		}
	}
	if o.Time.IsZero() {
		o.Time = time.Now().Truncate(time.Second)
	}
	msgs, err := readMessages(in, o)
	if err != nil {
		return res, err
	}
	if len(msgs) == 0 {
		return res, fmt.Errorf("render: no messages on the input (one payload per line)")
	}
	tr, err := app.Transformer(cfg)
	if err != nil {
		return res, err
	}
	p := batch.Partition{Stream: o.Stream, Topic: o.Topic, ID: o.Partition}
	bo := app.RecordOptions(cfg, tr)
	bo.Schema = st.Schema
	namer := app.Names(cfg)
	res.Objects, err = countObjects(p, bo, rotation(cfg), namer, int(cfg.Plugin.MaxPartitionValues), msgs)
	if err != nil {
		return res, err
	}
	names := namer.Partition(o.Stream, o.Topic, o.Partition)
	first, last, ts := msgs[0].Offset, msgs[len(msgs)-1].Offset, msgs[0].Timestamp
	res.Key = names.Object(first, last, ts)
	if namer.HasValues() {
		// The unit is an object per value, named after the unit.
		if msgs, res.Value, res.Values, err = valueRecords(p, bo, namer, msgs, o.Value); err != nil {
			return res, err
		}
		key, ok := names.ValueObject(res.Key, ts, fields.Segments(res.Value))
		if !ok {
			return res, fmt.Errorf("render: no object of the value %q in the unit %s", res.Value, res.Key)
		}
		res.Key = key
	} else if o.Value != "" {
		return res, fmt.Errorf("render: -value %q: path_template %q has no payload field ({payload.<path>})", o.Value, cfg.Plugin.PathTemplate)
	}
	r, err := renderObject(p, bo, cfg, msgs)
	if err != nil {
		return res, err
	}
	if _, err := out.Write(r.body); err != nil {
		return res, fmt.Errorf("render: write: %w", err)
	}
	res.Messages, res.Bytes, res.InvalidPayloads, res.Rejected = len(msgs), len(r.body), r.invalid, r.rejected
	if r.rejected > 0 {
		res.ErrorsKey = names.Errors(first, last, ts)
		if k, ok := namer.ErrorsKey(res.Key); ok && namer.HasValues() {
			res.ErrorsKey = k // a value object's error object is named after it
		}
		if o.Errors != nil {
			if _, err := o.Errors.Write(r.errs); err != nil {
				return res, fmt.Errorf("render: write the error object: %w", err)
			}
		}
	}
	return res, nil
}

// valueRecords returns the messages of one value, want's (the first
// message's when want is ""), with every value's count, as the sink
// splits a unit under a path template with payload fields.
func valueRecords(p batch.Partition, bo batch.Options, n *keys.Namer, msgs []batch.Message, want string) ([]batch.Message, string, []ValueRecords, error) {
	enc, err := batch.NewEncoder(p, bo)
	if err != nil {
		return nil, "", nil, err
	}
	enc.RecordMembers()
	r := fields.New(n.PayloadFields(), n.DefaultSegment())
	of := make([]string, len(msgs))
	idx := map[string]int{}
	var counts []ValueRecords
	for i := range msgs {
		v := r.Value(enc, &msgs[i])
		of[i] = v
		if _, seen := idx[v]; !seen {
			idx[v] = len(counts)
			counts = append(counts, ValueRecords{Value: v})
		}
		counts[idx[v]].Records++
	}
	if want == "" {
		want = counts[0].Value
	}
	if _, ok := idx[want]; !ok {
		names := make([]string, len(counts))
		for i, c := range counts {
			names[i] = c.Value
		}
		return nil, "", counts, fmt.Errorf("render: -value %q: no message has it; the messages' values (folder segments) are %q", want, names)
	}
	var picked []batch.Message
	for i := range msgs {
		if of[i] == want {
			picked = append(picked, msgs[i])
		}
	}
	return picked, want, counts, nil
}

// rendered is one object Render made, with its error object.
type rendered struct {
	body, errs []byte
	rejected   int
	invalid    uint64
}

// rotation is the sink's rule for where one object ends.
func rotation(cfg *config.Config) batch.Rotation {
	return app.Rotation(&cfg.Plugin)
}

// renderObject builds the object as the sink does: in memory up to
// multipart_threshold, then compressed in one go; larger objects through
// an ObjectWriter, as the sink streams them (both passes for Parquet).
func renderObject(p batch.Partition, bo batch.Options, cfg *config.Config, msgs []batch.Message) (rendered, error) {
	var r rendered
	enc, err := batch.NewEncoder(p, bo)
	if err != nil {
		return r, err
	}
	acc := batch.NewAccumulator(enc, batch.Rotation{}, cfg.Plugin.MultipartThreshold)
	for i := range msgs {
		if _, err := acc.Add(&msgs[i]); err != nil {
			return r, err
		}
	}
	r.invalid = enc.InvalidPayloads()
	compression := cfg.Plugin.Compression
	if !acc.Spilled() {
		data, errs, err := acc.Render()
		if err != nil {
			return r, err
		}
		r.errs, r.rejected = errs, bytes.Count(errs, []byte{'\n'})
		r.body, err = batch.Compress(nil, data, compression)
		return r, err
	}
	if enc, err = batch.NewEncoder(p, bo); err != nil {
		return r, err
	}
	var buf bytes.Buffer
	ow, err := batch.NewObjectWriter(&buf, enc, compression)
	if err != nil {
		return r, err
	}
	for pass := 1; pass <= ow.Passes(); pass++ {
		fn := ow.Write
		if pass < ow.Passes() {
			fn = ow.Observe
		}
		for i := range msgs {
			if err := fn(&msgs[i]); err != nil {
				return r, err
			}
		}
	}
	if err := ow.Close(); err != nil {
		return r, err
	}
	r.body, r.rejected = buf.Bytes(), ow.Rejected()
	r.errs, _ = ow.ErrorBytes() // no bound: all kept
	return r, nil
}

// units is what countObjects fills: an object, or a unit split by values.
type units interface {
	Add(m *batch.Message) (bool, error)
	Full() bool
	Len() int
	Reset()
}

// countObjects runs the sink's rotation over msgs: how many objects, or
// under a path template with payload fields how many units (each of
// at most maxValues values), the sink cuts them into.
func countObjects(p batch.Partition, bo batch.Options, rot batch.Rotation, namer *keys.Namer, maxValues int, msgs []batch.Message) (int, error) {
	enc, err := batch.NewEncoder(p, bo)
	if err != nil {
		return 0, err
	}
	var acc units = batch.NewAccumulator(enc, rot, 0)
	if namer.HasValues() {
		acc = fields.NewUnit(batch.NewSplit(enc, rot, 0, maxValues), enc, fields.New(namer.PayloadFields(), namer.DefaultSegment()))
	}
	n := 0
	for i := range msgs {
		ok, err := acc.Add(&msgs[i])
		if err != nil {
			return 0, err
		}
		if !ok {
			n++
			acc.Reset()
			if _, err := acc.Add(&msgs[i]); err != nil {
				return 0, err
			}
		}
		if acc.Full() {
			n++
			acc.Reset()
		}
	}
	if acc.Len() > 0 {
		n++
	}
	return n, nil
}

func readMessages(in io.Reader, o RenderOptions) ([]batch.Message, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxRenderLine)
	var msgs []batch.Message
	next, ts := o.FirstOffset, uint64(o.Time.UnixMicro())
	for line := 1; sc.Scan(); line++ {
		m := batch.Message{Offset: next, Timestamp: ts, Payload: slices.Clone(sc.Bytes())}
		if o.Envelope {
			var err error
			if m, err = parseEnvelope(sc.Bytes(), next, ts); err != nil {
				return nil, fmt.Errorf("render: line %d: %w", line, err)
			}
			if len(msgs) > 0 && m.Offset <= msgs[len(msgs)-1].Offset {
				return nil, fmt.Errorf("render: line %d: offset %d does not follow %d (offsets must increase)", line, m.Offset, msgs[len(msgs)-1].Offset)
			}
		}
		msgs = append(msgs, m)
		next = m.Offset + 1
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("render: read input: %w", err)
	}
	return msgs, nil
}

// envelope is one line of `poller render -envelope`.
type envelope struct {
	Offset        *uint64                    `json:"offset"`
	Timestamp     json.RawMessage            `json:"timestamp"`
	Headers       map[string]json.RawMessage `json:"headers"`
	Payload       json.RawMessage            `json:"payload"`
	PayloadBase64 *string                    `json:"payload_base64"`
}

// parseEnvelope reads one envelope. A string payload is the message's
// text; any other JSON value is its compact JSON; payload_base64 gives
// exact bytes.
func parseEnvelope(line []byte, offset, ts uint64) (batch.Message, error) {
	var e envelope
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return batch.Message{}, fmt.Errorf("envelope: %w (want {\"offset\":0,\"timestamp\":\"2024-03-16T14:02:31Z\",\"headers\":{},\"payload\":...})", err)
	}
	m := batch.Message{Offset: offset, Timestamp: ts}
	if e.Offset != nil {
		m.Offset = *e.Offset
	}
	if len(e.Timestamp) > 0 {
		t, err := envelopeTime(e.Timestamp)
		if err != nil {
			return m, err
		}
		m.Timestamp = t
	}
	payload, err := envelopePayload(e)
	if err != nil {
		return m, err
	}
	m.Payload = payload
	m.Headers, err = encodeHeaders(e.Headers)
	return m, err
}

func envelopeTime(raw json.RawMessage) (uint64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Errorf("timestamp %q: want RFC 3339 (2024-03-16T14:02:31Z) or microseconds since the epoch", s)
		}
		return uint64(t.UnixMicro()), nil
	}
	var n uint64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("timestamp %s: want RFC 3339 (2024-03-16T14:02:31Z) or microseconds since the epoch", raw)
	}
	return n, nil
}

func envelopePayload(e envelope) ([]byte, error) {
	switch {
	case e.PayloadBase64 != nil && len(e.Payload) > 0:
		return nil, fmt.Errorf("envelope: give payload or payload_base64, not both")
	case e.PayloadBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*e.PayloadBase64)
		if err != nil {
			return nil, fmt.Errorf("payload_base64: %w", err)
		}
		return b, nil
	case len(e.Payload) == 0:
		return nil, fmt.Errorf("envelope: no payload (or payload_base64)")
	}
	var s string
	if json.Unmarshal(e.Payload, &s) == nil {
		return []byte(s), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, e.Payload); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Iggy user-header kinds (iggy-0.8-protocol.md §3) that envelopes use.
const (
	hdrString = 2
	hdrBool   = 3
	hdrInt64  = 7
	hdrDouble = 15
)

// encodeHeaders writes envelope headers in Iggy's wire form: string keys;
// string, boolean, integer (int64) or other number (double) values.
func encodeHeaders(h map[string]json.RawMessage) ([]byte, error) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []byte
	for _, k := range names {
		kind, val, err := headerValue(h[k])
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
		out = appendField(out, hdrString, []byte(k))
		out = appendField(out, kind, val)
	}
	return out, nil
}

func headerValue(raw json.RawMessage) (byte, []byte, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return hdrString, []byte(s), nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		v := byte(0)
		if b {
			v = 1
		}
		return hdrBool, []byte{v}, nil
	}
	var i int64
	if json.Unmarshal(raw, &i) == nil {
		return hdrInt64, binary.LittleEndian.AppendUint64(nil, uint64(i)), nil
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return hdrDouble, binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)), nil
	}
	return 0, nil, fmt.Errorf("want a string, number or boolean, got %s", raw)
}

func appendField(dst []byte, kind byte, v []byte) []byte {
	dst = append(dst, kind)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

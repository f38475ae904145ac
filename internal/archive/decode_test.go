package archive

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// encode writes msgs as one object, as the sink does.
func encode(t testing.TB, l Layout, msgs []batch.Message) []byte {
	t.Helper()
	enc, err := batch.NewEncoder(batch.Partition{Stream: "s", Topic: "t", ID: 3},
		batch.Options{Format: l.Format, Schema: l.Schema, IncludeMetadata: l.Metadata, IncludeHeaders: l.Headers})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := batch.NewObjectWriter(&buf, enc, l.Compression)
	if err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < w.Passes(); pass++ {
		for i := range msgs {
			if pass == 0 && w.Passes() == 2 {
				err = w.Observe(&msgs[i])
			} else {
				err = w.Write(&msgs[i])
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func header(key, value string) []byte { return AppendHeader(nil, key, kindString, []byte(value)) }

// messages are a seeded mix of the payloads users send under schema.
func messages(rng *rand.Rand, schema batch.Schema, n int) []batch.Message {
	out := make([]batch.Message, n)
	for i := range out {
		m := batch.Message{Offset: uint64(100 + i), Timestamp: uint64(1_700_000_000+i*7) * 1_000_000}
		switch schema {
		case batch.SchemaJSON:
			switch rng.IntN(4) {
			case 0:
				m.Payload = fmt.Appendf(nil, `{"n":%d,"user":{"id":"u%d","tags":["a","b"]},"ok":true,"score":%d.5}`, i, rng.IntN(9), i)
			case 1:
				m.Payload = fmt.Appendf(nil, `{"n":%d,"level":"info"}`, i)
			case 2:
				m.Payload = fmt.Appendf(nil, `[%d,"x"]`, i)
			default:
				m.Payload = fmt.Appendf(nil, `"line %d"`, i)
			}
		case batch.SchemaText:
			m.Payload = fmt.Appendf(nil, "plain text %d, \"quoted\"\ttab", i)
		default:
			m.Payload = make([]byte, 1+rng.IntN(40))
			for j := range m.Payload {
				m.Payload[j] = byte(rng.IntN(256))
			}
			m.Payload[0] = 0xff // never JSON
		}
		if rng.IntN(2) == 0 {
			m.Headers = append(header("content-type", "application/json"), header("trace", fmt.Sprint(i))...)
		}
		out[i] = m
	}
	return out
}

// TestDecodeRoundTrip writes seeded messages in every format, compression
// and schema the sink writes, and reads them back.
func TestDecodeRoundTrip(t *testing.T) {
	formats := []batch.Format{batch.FormatJSONLines, batch.FormatJSONArray, batch.FormatRaw, batch.FormatParquet}
	for _, f := range formats {
		comps := []batch.Compression{batch.CompressionNone, batch.CompressionGzip, batch.CompressionZstd}
		if f == batch.FormatParquet {
			comps = comps[:1]
		}
		for _, c := range comps {
			for _, schema := range []batch.Schema{batch.SchemaJSON, batch.SchemaText, batch.SchemaRaw} {
				for _, meta := range []bool{true, false} {
					l := Layout{Format: f, Compression: c, Schema: schema, Metadata: meta, Headers: meta}
					t.Run(fmt.Sprintf("%s/%s/%s/meta=%v", f, c, schema, meta), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(uint64(len(f)), uint64(len(schema))))
						n := 40
						if f == batch.FormatRaw && schema != batch.SchemaJSON {
							n = 1 // unsplittable: one message per object
						}
						msgs := messages(rng, schema, n)
						if f == batch.FormatRaw {
							for i := range msgs {
								msgs[i].Headers = nil
							}
						}
						recs, err := Decode(encode(t, l, msgs), l, uint64(n))
						if err != nil {
							t.Fatal(err)
						}
						if len(recs) != n {
							t.Fatalf("%d records, want %d", len(recs), n)
						}
						for i, r := range recs {
							checkRecord(t, l, msgs[i], r)
						}
					})
				}
			}
		}
	}
}

func checkRecord(t *testing.T, l Layout, m batch.Message, r Record) {
	t.Helper()
	metaHeld := l.Metadata && l.Format != batch.FormatRaw
	if r.HasOffset != metaHeld || (metaHeld && r.Offset != m.Offset) {
		t.Fatalf("offset %d (%v), want %d (%v)", r.Offset, r.HasOffset, m.Offset, metaHeld)
	}
	if metaHeld && r.Timestamp != m.Timestamp {
		t.Fatalf("offset %d: time %d, want %d", m.Offset, r.Timestamp, m.Timestamp)
	}
	if l.Headers && l.Format != batch.FormatRaw && !bytes.Equal(r.Headers, m.Headers) {
		t.Fatalf("offset %d: headers %q, want %q", m.Offset, r.Headers, m.Headers)
	}
	want := m.Payload
	if !bytes.Equal(r.Payload, want) && !(l.Format == batch.FormatParquet && l.Schema == batch.SchemaJSON && sameJSON(r.Payload, want)) {
		t.Fatalf("offset %d: payload %q, want %q", m.Offset, r.Payload, want)
	}
}

func TestDecodeRawRefusesManyBinaryPayloads(t *testing.T) {
	l := Layout{Format: batch.FormatRaw, Schema: batch.SchemaText}
	_, err := Decode([]byte("ab"), l, 2)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("no delimiter")) {
		t.Fatalf("err = %v", err)
	}
}

func TestJSONHeaderKinds(t *testing.T) {
	l := Layout{Format: batch.FormatJSONLines, Schema: batch.SchemaJSON, Headers: true}
	recs, err := Decode([]byte(`{"headers":{"b":true,"i":-3,"s":"x","u":18446744073709551615,"f":1.5},"payload":1}`+"\n"), l, 1)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	want = AppendHeader(want, "b", kindBool, []byte{1})
	want = AppendHeader(want, "f", kindDouble, binary.LittleEndian.AppendUint64(nil, 0x3ff8000000000000))
	want = AppendHeader(want, "i", kindInt64, binary.LittleEndian.AppendUint64(nil, ^uint64(2)))
	want = AppendHeader(want, "s", kindString, []byte("x"))
	want = AppendHeader(want, "u", kindUint64, binary.LittleEndian.AppendUint64(nil, ^uint64(0)))
	if !bytes.Equal(recs[0].Headers, want) || string(recs[0].Payload) != "1" {
		t.Fatalf("got %q %q", recs[0].Headers, recs[0].Payload)
	}
}

// TestDecodeErrorsRoundTrip: the records the sink sends to an error object
// come back with their own payload bytes, offsets, times and headers.
func TestDecodeErrorsRoundTrip(t *testing.T) {
	enc, err := batch.NewEncoder(batch.Partition{Stream: "s", Topic: "t", ID: 1},
		batch.Options{Format: batch.FormatJSONLines, Schema: batch.SchemaJSON, IncludeMetadata: true, IncludeHeaders: true, InvalidPayload: batch.InvalidErrorObject})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := batch.NewObjectWriter(&buf, enc, batch.CompressionNone)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []batch.Message{
		{Offset: 5, Timestamp: 1_700_000_000_123_456, Payload: []byte(`{"ok":1}`)},
		{Offset: 6, Timestamp: 1_700_000_001_654_321, Payload: []byte(`{"broken":`), Headers: header("k", "v")},
		{Offset: 7, Timestamp: 1_700_000_002_000_001, Payload: []byte{0xff, 0x00, '{'}},
	}
	for i := range msgs {
		if err := w.Write(&msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, ok := w.ErrorBytes()
	if !ok {
		t.Fatal("no error lines kept")
	}
	recs, err := DecodeErrors(lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d error records, want 2", len(recs))
	}
	for i, r := range recs {
		m := msgs[1+i]
		if r.Offset != m.Offset || r.Timestamp != m.Timestamp || !bytes.Equal(r.Payload, m.Payload) || !bytes.Equal(r.Headers, m.Headers) {
			t.Fatalf("error record %d: %+v, want %+v", i, r, m)
		}
	}
}

// TestParquetRenamedColumns: a member renamed for its column comes back
// under the column's name (a file holds no other), as docs/restore.md says;
// members named like the writer's own columns come back as members.
func TestParquetRenamedColumns(t *testing.T) {
	l := Layout{Format: batch.FormatParquet, Schema: batch.SchemaJSON, Metadata: true, Headers: true}
	for _, c := range []struct{ payloads, want []string }{
		{[]string{`{"":1,"payload":2,"level":3,"Level":4,"offset":5,"_":6}`}, []string{`{"_":1,"payload":2,"level":3,"Level_2":4,"offset_2":5,"__2":6}`}},
		{[]string{`{"payload":"x","a":1}`, `[1,"2"]`, `{"payload_extra":"y"}`, `{"payload":"{}"}`},
			[]string{`{"payload_2":"x","a":1}`, `[1,"2"]`, `{"payload_extra":"y"}`, `{"payload_2":"{}"}`}},
		{[]string{`{"payload":"[1]","b":true}`, `{"payload":"{\"a\":1}"}`}, []string{`{"payload":"[1]","b":true}`, `{"payload":"{\"a\":1}"}`}},
		{[]string{`{"payload_extra":"y","payload":{"k":[1]}}`}, []string{`{"payload_extra":"y","payload":{"k":[1]}}`}},
		// A member of two kinds is held as JSON text (and comes back as
		// that text, as any such member): an object among them says it is
		// a member, not the payload.
		{[]string{`{"payload":{"a":1}}`, `{"payload":"x"}`}, []string{`{"payload":"{\"a\":1}"}`, `{"payload":"\"x\""}`}},
	} {
		msgs := make([]batch.Message, len(c.payloads))
		for i, p := range c.payloads {
			msgs[i] = batch.Message{Offset: uint64(i), Timestamp: 1_700_000_000_000_000, Payload: []byte(p)}
		}
		recs, err := Decode(encode(t, l, msgs), l, uint64(len(msgs)))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if !sameJSON(r.Payload, []byte(c.want[i])) {
				t.Errorf("%s: payload %s, want %s", c.payloads[i], r.Payload, c.want[i])
			}
		}
	}
}

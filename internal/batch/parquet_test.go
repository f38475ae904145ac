package batch

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// mixed returns n messages with headers: JSON objects of a stable shape,
// and every seventh payload not JSON (every 21st not even UTF-8).
func mixed(n int) []Message {
	hdrs := wireHeaders(strHdr("content-type", "application/json"), hdr{kindString, []byte("attempt"), kindUint32, le32(1)})
	msgs := make([]Message, n)
	for i := range msgs {
		p := fmt.Appendf(nil, `{"i":%d, "level":"%s","ctx":{"user":"u%d","ids":[%d,%d]},"lat":%d.5}`, i, []string{"info", "warn"}[i%2], i%5, i, i+1, i%100)
		switch {
		case i%21 == 20:
			p = []byte{'{', 0xff, '}'}
		case i%7 == 6:
			p = fmt.Appendf(nil, `{"i":%d,`, i)
		}
		msgs[i] = Message{Offset: uint64(50 + i), Timestamp: ts42 + uint64(i)*250_000, Headers: hdrs, Payload: p}
	}
	msgs[3].Headers = nil
	return msgs
}

// streamed writes msgs through an ObjectWriter, both passes, and returns
// the object and its error object.
func streamed(t testing.TB, e *Encoder, msgs []Message) (data, errs []byte, rejected int) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewObjectWriter(&buf, e, "none")
	if err != nil {
		t.Fatal(err)
	}
	for pass := 1; pass <= w.Passes(); pass++ {
		for i := range msgs {
			fn := w.Write
			if pass < w.Passes() {
				fn = w.Observe
			}
			if err := fn(&msgs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, ok := w.ErrorBytes()
	if !ok {
		t.Fatal("error lines dropped without a bound")
	}
	return buf.Bytes(), lines, w.Rejected()
}

// accumulated keeps msgs in one Accumulator and renders the object.
func accumulated(t testing.TB, e *Encoder, msgs []Message) (data, errs []byte) {
	t.Helper()
	a := NewAccumulator(e, Rotation{}, 1<<30)
	for i := range msgs {
		if ok, err := a.Add(&msgs[i]); !ok || err != nil {
			t.Fatalf("Add(%d): %v %v", i, ok, err)
		}
	}
	data, errs, err := a.Render()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(data), bytes.Clone(errs)
}

func pinned(t testing.TB, src string) *parquet.PinnedSchema {
	t.Helper()
	s, err := parquet.ParseSchema([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const mixedSchema = `{"fields":[{"name":"i","type":"int64","required":true},{"name":"level","type":"string"},{"name":"lat","type":"int64"}]}`

// TestParquetSamePathsSameBytes: the Accumulator (messages kept in
// memory) and the ObjectWriter (the messages given twice) write the same
// file and the same error object, for every codec, inferred or pinned,
// with small row groups and pages, and the file is a Parquet file.
func TestParquetSamePathsSameBytes(t *testing.T) {
	msgs := mixed(600)
	for _, codec := range []string{"", "zstd", "snappy", "gzip", "none"} {
		for _, pin := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pinned=%v", codec, pin), func(t *testing.T) {
				o := Options{Format: FormatParquet, Schema: SchemaJSON, IncludeMetadata: true, IncludeHeaders: true, InvalidPayload: InvalidErrorObject,
					Parquet: ParquetOptions{Compression: codec, RowGroupBytes: 8 << 10, PageBytes: 1 << 10}}
				if pin {
					o.Parquet.Schema = pinned(t, mixedSchema)
					o.Parquet.KeepExtra = true
				}
				e := mustEncoder(t, appLogs, o)
				data, errs := accumulated(t, e, msgs)
				sdata, serrs, rejected := streamed(t, mustEncoder(t, appLogs, o), msgs)
				if !bytes.Equal(data, sdata) || !bytes.Equal(errs, serrs) {
					t.Fatalf("in memory %d+%d bytes, streamed %d+%d bytes: they differ", len(data), len(errs), len(sdata), len(serrs))
				}
				if !bytes.HasPrefix(data, []byte("PAR1")) || !bytes.HasSuffix(data, []byte("PAR1")) {
					t.Fatalf("not a Parquet file: %q…", data[:8])
				}
				want := 600 / 7 // not JSON
				if pin {
					want += 600 - 600/7 // "lat" is 1.5, 2.5, ... : never an int64
				}
				if n := bytes.Count(errs, []byte("\n")); n != want || rejected != want || e.InvalidPayloads() != uint64(want) {
					t.Fatalf("%d error lines, %d rejected by the writer, %d counted by Add; want %d", n, rejected, e.InvalidPayloads(), want)
				}
			})
		}
	}
}

// TestParquetPinnedCountsWhatTheFileRejects: the Accumulator counts, as
// each message arrives, the records its file will reject; under "fail" it
// refuses the first one.
func TestParquetPinnedCountsWhatTheFileRejects(t *testing.T) {
	msgs := []Message{
		{Offset: 0, Payload: []byte(`{"i":1,"level":"info","lat":3}`)},
		{Offset: 1, Payload: []byte(`{"i":"one"}`)},
		{Offset: 2, Payload: []byte(`{"level":"no i"}`)},
		{Offset: 3, Payload: []byte(`[1]`)},
		{Offset: 4, Payload: []byte(`{"i":4,"extra":{"kept":true}}`)},
	}
	o := Options{Format: FormatParquet, Schema: SchemaJSON, InvalidPayload: InvalidErrorObject, Parquet: ParquetOptions{Schema: pinned(t, mixedSchema)}}
	e := mustEncoder(t, appLogs, o)
	_, errs := accumulated(t, e, msgs)
	if e.InvalidPayloads() != 3 {
		t.Errorf("counted %d, want 3", e.InvalidPayloads())
	}
	want := []string{
		`{"offset":1,"timestamp":"1970-01-01T00:00:00.000000Z","stream":"app_logs","topic":"api_requests","partition_id":1,"reason":"payload does not match the schema: field \"i\": want int64, got string","payload":"{\"i\":\"one\"}"}`,
		`{"offset":2,"timestamp":"1970-01-01T00:00:00.000000Z","stream":"app_logs","topic":"api_requests","partition_id":1,"reason":"payload does not match the schema: field \"i\": required, missing","payload":"{\"level\":\"no i\"}"}`,
		`{"offset":3,"timestamp":"1970-01-01T00:00:00.000000Z","stream":"app_logs","topic":"api_requests","partition_id":1,"reason":"payload does not match the schema: the payload is a JSON array, not an object","payload":"[1]"}`,
	}
	if got := strings.Split(strings.TrimSuffix(string(errs), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("error object:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	o.InvalidPayload = InvalidFail
	a := NewAccumulator(mustEncoder(t, appLogs, o), Rotation{}, 1<<20)
	if ok, err := a.Add(&msgs[0]); !ok || err != nil {
		t.Fatal(ok, err)
	}
	_, err := a.Add(&msgs[1])
	var ipe *InvalidPayloadError
	if !errors.As(err, &ipe) || ipe.Offset != 1 || !errors.Is(err, parquet.ErrSchemaMismatch) || a.Len() != 1 {
		t.Errorf("fail on a mismatch: %v (len %d)", err, a.Len())
	}

	o.InvalidPayload = InvalidBase64
	if _, err := NewEncoder(appLogs, o); err == nil || !strings.Contains(err.Error(), `needs invalid_payload "error_object" or "fail"`) {
		t.Errorf("pinned schema with base64: %v", err)
	}
}

// TestParquetRotationCountsInput: max_file_size counts payload and header
// bytes for Parquet, the keep limit too; a spilled object keeps counting
// and streams to the bytes it would have had.
func TestParquetRotationCountsInput(t *testing.T) {
	msgs := mixed(300)
	o := Options{Format: FormatParquet, Schema: SchemaJSON, IncludeHeaders: true, InvalidPayload: InvalidErrorObject}
	e := mustEncoder(t, appLogs, o)
	limit := int64(5000)
	ref := NewAccumulator(e, Rotation{MaxBytes: limit}, 1<<30)
	sp := NewAccumulator(mustEncoder(t, appLogs, o), Rotation{MaxBytes: limit}, 1000)
	var input int64
	n := 0
	for i := range msgs {
		ok1, err1 := ref.Add(&msgs[i])
		ok2, err2 := sp.Add(&msgs[i])
		if err1 != nil || err2 != nil || ok1 != ok2 || ref.Size() != sp.Size() || ref.Full() != sp.Full() {
			t.Fatalf("message %d: spilling changed rotation", i)
		}
		if !ok1 {
			break
		}
		input += int64(len(msgs[i].Payload) + len(msgs[i].Headers))
		n++
	}
	if ref.Size() != input || input > limit || input+int64(len(msgs[n].Payload)+len(msgs[n].Headers)) <= limit {
		t.Fatalf("size %d, input %d: not the input bytes up to %d", ref.Size(), input, limit)
	}
	if !sp.Spilled() || sp.Bytes() != nil || ref.Spilled() {
		t.Fatal("spilling")
	}
	data, errs := accumulated(t, mustEncoder(t, appLogs, o), msgs[:n])
	sdata, serrs, _ := streamed(t, mustEncoder(t, appLogs, o), msgs[:n])
	rdata, rerrs, err := ref.Render()
	if err != nil || !bytes.Equal(rdata, data) || !bytes.Equal(rerrs, errs) || !bytes.Equal(sdata, data) || !bytes.Equal(serrs, errs) {
		t.Fatal("the rotated object differs between the paths")
	}
}

// TestErrorObjectJSONFormats: under error_object the JSON formats leave
// invalid payloads out of the object (whose range still covers them) and
// write them, in order, as error lines; both paths agree.
func TestErrorObjectJSONFormats(t *testing.T) {
	msgs := mixed(100)
	for _, format := range []Format{FormatJSONLines, FormatJSONArray, FormatRaw} {
		t.Run(string(format), func(t *testing.T) {
			o := Options{Format: format, Schema: SchemaJSON, IncludeMetadata: true, IncludeHeaders: true, InvalidPayload: InvalidErrorObject}
			e := mustEncoder(t, appLogs, o)
			data, errs := accumulated(t, e, msgs)
			sdata, serrs, rejected := streamed(t, mustEncoder(t, appLogs, o), msgs)
			if !bytes.Equal(data, sdata) || !bytes.Equal(errs, serrs) {
				t.Fatalf("paths differ:\n%q\n%q", errs, serrs)
			}
			lines := strings.Split(strings.TrimSuffix(string(errs), "\n"), "\n")
			if len(lines) != 100/7 || rejected != 100/7 || e.InvalidPayloads() != 100/7 {
				t.Fatalf("%d lines, %d rejected, %d counted", len(lines), rejected, e.InvalidPayloads())
			}
			want6 := `{"offset":56,"timestamp":"2024-03-16T14:02:32.500000Z","stream":"app_logs","topic":"api_requests","partition_id":1,"reason":"payload is not valid JSON (at byte 7 of 7)","headers":{"attempt":1,"content-type":"application/json"},"payload":"{\"i\":6,"}`
			want20 := `{"offset":70,"timestamp":"2024-03-16T14:02:36.000000Z","stream":"app_logs","topic":"api_requests","partition_id":1,"reason":"payload is not valid JSON (at byte 1 of 3)","headers":{"attempt":1,"content-type":"application/json"},"payload_base64":"e/99"}`
			if lines[0] != want6 || lines[2] != want20 {
				t.Errorf("error lines:\n%s\n%s\nwant\n%s\n%s", lines[0], lines[2], want6, want20)
			}
			if format != FormatRaw {
				if n := bytes.Count(data, []byte(`"offset":`)); n != 100-100/7 {
					t.Errorf("%d records in the object, want %d", n, 100-100/7)
				}
			}
			if format == FormatJSONArray && (!bytes.HasPrefix(data, []byte(`[{`)) || bytes.Contains(data, []byte(",,"))) {
				t.Errorf("json_array framing: %.40q", data)
			}
		})
	}
	// Every record rejected: a valid empty object.
	bad := []Message{{Offset: 1, Payload: []byte("x")}, {Offset: 2, Payload: []byte("y")}}
	for _, format := range []Format{FormatJSONLines, FormatJSONArray, FormatParquet} {
		e := mustEncoder(t, appLogs, Options{Format: format, Schema: SchemaJSON, InvalidPayload: InvalidErrorObject})
		data, errs := accumulated(t, e, bad)
		sdata, _, _ := streamed(t, mustEncoder(t, appLogs, Options{Format: format, Schema: SchemaJSON, InvalidPayload: InvalidErrorObject}), bad)
		if bytes.Count(errs, []byte("\n")) != 2 || !bytes.Equal(data, sdata) {
			t.Errorf("%s: all rejected: object %q, %d error lines", format, data, bytes.Count(errs, []byte("\n")))
		}
		if format == FormatJSONArray && string(data) != "[]" {
			t.Errorf("json_array with every record rejected: %q", data)
		}
	}
}

// TestObjectWriterErrorBounds: error lines past KeepErrors are dropped
// and must be made again with StreamErrors, to the same bytes.
func TestObjectWriterErrorBounds(t *testing.T) {
	msgs := mixed(200)
	for _, format := range []Format{FormatJSONLines, FormatParquet} {
		o := Options{Format: format, Schema: SchemaJSON, IncludeHeaders: true, InvalidPayload: InvalidErrorObject}
		_, want, _ := streamed(t, mustEncoder(t, appLogs, o), msgs)
		w, err := NewObjectWriter(&bytes.Buffer{}, mustEncoder(t, appLogs, o), "none")
		if err != nil {
			t.Fatal(err)
		}
		w.KeepErrors(500)
		var again bytes.Buffer
		w2, _ := NewObjectWriter(&bytes.Buffer{}, mustEncoder(t, appLogs, o), "none")
		w2.StreamErrors(&again)
		for _, ow := range []*ObjectWriter{w, w2} {
			for pass := 1; pass <= ow.Passes(); pass++ {
				for i := range msgs {
					fn := ow.Write
					if pass < ow.Passes() {
						fn = ow.Observe
					}
					if err := fn(&msgs[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := ow.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if lines, ok := w.ErrorBytes(); ok || lines != nil || w.Rejected() != 200/7 {
			t.Errorf("%s: %d bytes of lines kept past the bound, ok %v", format, len(lines), ok)
		}
		if !bytes.Equal(again.Bytes(), want) {
			t.Errorf("%s: streamed error lines differ", format)
		}
	}
	if _, err := NewObjectWriter(&bytes.Buffer{}, mustEncoder(t, appLogs, Options{Format: FormatParquet, Schema: SchemaJSON}), CompressionZstd); err == nil {
		t.Error("a Parquet object compressed as a whole was accepted")
	}
}

// TestParquetTextAndRawPayloads: under text and raw the file has one
// payload column and nothing is rejected; transforms apply to raw JSON
// objects as the raw format applies them.
func TestParquetTextAndRawPayloads(t *testing.T) {
	msgs := mixed(50)
	for _, schema := range []Schema{SchemaText, SchemaRaw, SchemaAvro} {
		o := Options{Format: FormatParquet, Schema: schema, IncludeMetadata: true, InvalidPayload: InvalidErrorObject, Transformer: &wrapTransformer{},
			Parquet: ParquetOptions{Compression: "none"}}
		data, errs := accumulated(t, mustEncoder(t, appLogs, o), msgs)
		sdata, _, _ := streamed(t, mustEncoder(t, appLogs, o), msgs)
		if errs != nil || !bytes.Equal(data, sdata) {
			t.Errorf("%s: %d error bytes, paths equal %v", schema, len(errs), bytes.Equal(data, sdata))
		}
		wrapped := bytes.Contains(data, []byte(`{"t":{"i":0,`))
		if wrapped != (schema != SchemaText) {
			t.Errorf("%s: transformed %v", schema, wrapped)
		}
	}
}

// TestParquetSteadyStateAllocs: keeping messages and writing the file
// allocate nothing per record once the buffers have grown (stable schema):
// an object of ten times the records costs about the same allocations —
// those of each file's schema and footer, and a few per column chunk (its
// dictionary table grows with the distinct values it holds).
func TestParquetSteadyStateAllocs(t *testing.T) {
	base := benchMessages(benchLines(1024))
	e := mustEncoder(t, appLogs, Options{Format: FormatParquet, Schema: SchemaJSON, IncludeMetadata: true, IncludeHeaders: true})
	a := NewAccumulator(e, Rotation{}, 1<<30)
	perObject := func(msgs []Message) float64 {
		run := func() {
			for i := range msgs {
				a.Add(&msgs[i])
			}
			if _, _, err := a.Render(); err != nil {
				t.Fatal(err)
			}
			a.Reset()
		}
		run()
		run()
		return testing.AllocsPerRun(10, run)
	}
	var many []Message
	for range 10 {
		many = append(many, base...)
	}
	small, big := perObject(base), perObject(many)
	if perRecord := (big - small) / float64(len(many)-len(base)); perRecord > 0.05 {
		t.Errorf("%.0f allocations for %d records, %.0f for %d: %.2f per record", small, len(base), big, len(many), perRecord)
	}
	t.Logf("%.0f allocations per object (%d or %d records)", big, len(base), len(many))
}

// TestParquetMalformedHeaders: headers that do not parse are counted, as
// the JSON formats count them, and the row gets null headers on both paths.
func TestParquetMalformedHeaders(t *testing.T) {
	msgs := mixed(10)
	msgs[4].Headers = []byte{kindString, 9, 0, 0, 0, 'x'} // a length past the end
	o := Options{Format: FormatParquet, Schema: SchemaJSON, IncludeHeaders: true}
	e := mustEncoder(t, appLogs, o)
	data, _ := accumulated(t, e, msgs)
	sdata, _, _ := streamed(t, mustEncoder(t, appLogs, o), msgs)
	if e.MalformedHeaders() != 1 || !bytes.Equal(data, sdata) {
		t.Fatalf("malformed headers counted %d; paths equal %v", e.MalformedHeaders(), bytes.Equal(data, sdata))
	}
}

// TestParquetConformRejectsToTheErrorObject: with a table's types
// (Parquet.Conform), a record whose value the column's type cannot hold
// goes to the error object with its reason, the same from an Accumulator
// and an ObjectWriter; base64 cannot keep such a record.
func TestParquetConformRejectsToTheErrorObject(t *testing.T) {
	var asked []string
	conform := func(stream, topic string) parquet.ConformFunc {
		asked = append(asked, stream+"/"+topic)
		return func(cols []parquet.Field) ([]parquet.Field, error) {
			for i := range cols {
				if cols[i].Name == "n" {
					cols[i].Type = parquet.Type{Kind: "int64"}
				}
			}
			return cols, nil
		}
	}
	msgs := []Message{
		{Offset: 10, Timestamp: ts42, Payload: []byte(`{"n":1}`)},
		{Offset: 11, Timestamp: ts42, Payload: []byte(`{"n":2.5}`)},
		{Offset: 12, Timestamp: ts42, Payload: []byte(`{"n":3}`)},
	}
	opts := Options{Format: FormatParquet, Schema: "json", IncludeMetadata: true, InvalidPayload: InvalidErrorObject,
		Parquet: ParquetOptions{Conform: conform}}
	data, errs := accumulated(t, mustEncoder(t, appLogs, opts), msgs)
	sdata, serrs, rejected := streamed(t, mustEncoder(t, appLogs, opts), msgs)
	if !bytes.Equal(data, sdata) || !bytes.Equal(errs, serrs) {
		t.Fatal("the Accumulator and the ObjectWriter made different objects")
	}
	if rejected != 1 || bytes.Count(errs, []byte("\n")) != 1 || !bytes.Contains(errs, []byte(`"offset":11`)) || !bytes.Contains(errs, []byte("want int64")) {
		t.Fatalf("rejected %d; error object:\n%s", rejected, errs)
	}
	if len(asked) != 2 || asked[0] != appLogs.Stream+"/"+appLogs.Topic {
		t.Fatalf("Conform asked for %v", asked)
	}
	opts.InvalidPayload = InvalidBase64
	if _, err := NewEncoder(appLogs, opts); err == nil || !strings.Contains(err.Error(), "error_object") {
		t.Fatalf("base64 with Conform: %v", err)
	}
}

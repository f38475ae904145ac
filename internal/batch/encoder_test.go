package batch

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hdr is one user header for wireHeaders.
type hdr struct {
	keyKind byte
	key     []byte
	valKind byte
	val     []byte
}

// wireHeaders builds Iggy's user-header wire form.
func wireHeaders(hs ...hdr) []byte {
	var b []byte
	for _, h := range hs {
		b = append(b, h.keyKind)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.key)))
		b = append(b, h.key...)
		b = append(b, h.valKind)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.val)))
		b = append(b, h.val...)
	}
	return b
}

func strHdr(k, v string) hdr { return hdr{kindString, []byte(k), kindString, []byte(v)} }

func le16(v uint16) []byte   { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte   { return binary.LittleEndian.AppendUint32(nil, v) }
func negU64(v uint64) uint64 { return -v }
func le64(v uint64) []byte   { return binary.LittleEndian.AppendUint64(nil, v) }

var appLogs = Partition{Stream: "app_logs", Topic: "api_requests", ID: 1}

const ts42 = 1_710_597_751_000_000 // 2024-03-16T14:02:31Z

func mustEncoder(t testing.TB, p Partition, o Options) *Encoder {
	t.Helper()
	e, err := NewEncoder(p, o)
	if err != nil {
		t.Fatalf("NewEncoder(%+v): %v", o, err)
	}
	return e
}

// renderObject frames msgs into one object the way the drain does.
func renderObject(t testing.TB, e *Encoder, msgs []Message) []byte {
	t.Helper()
	out := e.AppendHeader(nil)
	for i := range msgs {
		var err error
		out, err = e.AppendRecord(out, &msgs[i], i == 0)
		if err != nil {
			t.Fatalf("AppendRecord(offset %d): %v", msgs[i].Offset, err)
		}
	}
	return e.AppendTrailer(out)
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenUpstreamExamples reproduces upstream-s3-sink.md §4.5 byte for byte.
func TestGoldenUpstreamExamples(t *testing.T) {
	get := Message{Offset: 42, Timestamp: ts42,
		Headers: wireHeaders(strHdr("content-type", "application/json")),
		Payload: []byte(`{"method":"GET","path":"/api/users","status":200}`)}
	post := Message{Offset: 43, Timestamp: ts42 + 1_000_000,
		Payload: []byte(`{"method":"POST","path":"/api/users","status":201}`)}
	tests := []struct {
		golden string
		opts   Options
		msgs   []Message
	}{
		{"lines_metadata_headers.jsonl", Options{Format: "json_lines", Schema: "json", IncludeMetadata: true, IncludeHeaders: true}, []Message{get}},
		{"lines_metadata.jsonl", Options{Format: "json_lines", Schema: "json", IncludeMetadata: true}, []Message{get}},
		{"lines_bare.jsonl", Options{Format: "json_lines", Schema: "json"}, []Message{get}},
		{"array_metadata.json", Options{Format: "json_array", Schema: "json", IncludeMetadata: true}, []Message{get, post}},
		{"raw_two.bin", Options{Format: "raw", Schema: "json", IncludeMetadata: true, IncludeHeaders: true}, []Message{get, post}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			e := mustEncoder(t, appLogs, tt.opts)
			got := renderObject(t, e, tt.msgs)
			if want := readGolden(t, tt.golden); !bytes.Equal(got, want) {
				t.Errorf("object differs from golden\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

// TestHeaderKindsGolden renders one header of every kind, non-string keys,
// a duplicate key and escapes.
func TestHeaderKindsGolden(t *testing.T) {
	headers := wireHeaders(
		strHdr("u8", "overwritten"), // the later Uint8 "u8" wins, as in a BTreeMap
		strHdr("content-type", "application/json"),
		strHdr("dup", "first"),
		hdr{kindString, []byte("b"), kindBool, []byte{1}},
		hdr{kindString, []byte("i8"), kindInt8, []byte{0xFB}},
		hdr{kindString, []byte("i16"), kindInt16, le16(uint16(0xFFFF - 299))},
		hdr{kindString, []byte("i32"), kindInt32, le32(70000)},
		hdr{kindString, []byte("i64"), kindInt64, le64(negU64(9_000_000_000))},
		hdr{kindString, []byte("i128"), kindInt128, bytes.Repeat([]byte{0xFF}, 16)},
		hdr{kindString, []byte("u16"), kindUint16, le16(65535)},
		hdr{kindString, []byte("u32"), kindUint32, le32(math.MaxUint32)},
		hdr{kindString, []byte("u64"), kindUint64, le64(math.MaxUint64)},
		hdr{kindString, []byte("u128"), kindUint128, append(le64(0), le64(1)...)},
		hdr{kindString, []byte("f32"), kindFloat, le32(math.Float32bits(1.5))},
		hdr{kindString, []byte("f64"), kindDouble, le64(math.Float64bits(0.1))},
		hdr{kindString, []byte("f64big"), kindDouble, le64(math.Float64bits(1e21))},
		hdr{kindString, []byte("f64int"), kindDouble, le64(math.Float64bits(100))},
		hdr{kindString, []byte("f64nan"), kindDouble, le64(math.Float64bits(math.NaN()))},
		hdr{kindString, []byte("raw"), kindRaw, []byte{0, 1, 2, 0xFF}},
		hdr{kindInt32, le32(7), kindString, []byte("seven")},
		hdr{kindRaw, []byte{0xFF}, kindString, []byte("seven-raw")},
		strHdr("q\"", "a\nb\x01/<>é"),
		strHdr("dup", "second"),
		hdr{kindString, []byte("u8"), kindUint8, []byte{255}},
	)
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", IncludeHeaders: true})
	got := renderObject(t, e, []Message{{Headers: headers, Payload: []byte(`{"a":1}`)}})
	if want := readGolden(t, "header_kinds.jsonl"); !bytes.Equal(got, want) {
		t.Errorf("headers differ from golden\n got: %s\nwant: %s", got, want)
	}
	if !json.Valid(bytes.TrimSpace(got)) {
		t.Errorf("record is not valid JSON: %s", got)
	}
}

func TestMalformedHeadersAreDroppedAndCounted(t *testing.T) {
	good := wireHeaders(strHdr("k", "v"))
	tests := []struct {
		name    string
		headers []byte
	}{
		{"truncated length", good[:3]},
		{"length past end", good[:len(good)-1]},
		{"unknown kind", wireHeaders(hdr{kindString, []byte("k"), 99, []byte("v")})},
		{"kind zero", wireHeaders(hdr{0, []byte("k"), kindString, []byte("v")})},
		{"int32 of 3 bytes", wireHeaders(hdr{kindString, []byte("k"), kindInt32, []byte{1, 2, 3}})},
		{"bool of 0 bytes", wireHeaders(hdr{kindString, []byte("k"), kindBool, nil})},
		{"trailing garbage", append(append([]byte{}, good...), 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", IncludeHeaders: true})
			got, err := e.AppendRecord(nil, &Message{Headers: tt.headers, Payload: []byte(`1`)}, true)
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"payload":1}` + "\n"; string(got) != want {
				t.Errorf("got %q, want %q", got, want)
			}
			if e.MalformedHeaders() != 1 {
				t.Errorf("MalformedHeaders() = %d, want 1", e.MalformedHeaders())
			}
		})
	}
}

func TestHeadersOffOrAbsent(t *testing.T) {
	h := wireHeaders(strHdr("k", "v"))
	tests := []struct {
		name    string
		include bool
		headers []byte
		want    string
	}{
		{"off", false, h, `{"payload":1}`},
		{"none", true, nil, `{"payload":1}`},
		{"on", true, h, `{"headers":{"k":"v"},"payload":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEncoder(t, appLogs, Options{Format: "json_array", Schema: "json", IncludeHeaders: tt.include})
			got, err := e.AppendRecord(nil, &Message{Headers: tt.headers, Payload: []byte("1")}, true)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPayloadPerSchema(t *testing.T) {
	tests := []struct {
		name    string
		schema  Schema
		payload string
		want    string // the record, json_lines without metadata, no newline
		invalid uint64
	}{
		{"raw text is base64", "raw", "hello", `{"payload":"aGVsbG8="}`, 0},
		{"raw object nests", "raw", `{"a":1}`, `{"payload":{"a":1}}`, 0},
		{"raw number", "raw", `123`, `{"payload":123}`, 0},
		{"raw string", "raw", `"x"`, `{"payload":"x"}`, 0},
		{"raw binary", "raw", "\x00\x01\x02\xff", `{"payload":"AAEC/w=="}`, 0},
		{"raw pretty JSON compacted", "raw", "{ \"a\" : [ 1 , 2 ] }\n", `{"payload":{"a":[1,2]}}`, 0},
		{"proto JSON", "proto", `{"type_url":"t","value":"AA=="}`, `{"payload":{"type_url":"t","value":"AA=="}}`, 0},
		{"flatbuffer binary", "flatbuffer", "\x10\x00\x00\x00", `{"payload":"EAAAAA=="}`, 0},
		{"avro binary", "avro", "\x02\x06foo", `{"payload":"AgZmb28="}`, 0},
		{"text", "text", "hello", `{"payload":"hello"}`, 0},
		{"text escapes like serde_json", "text", "q\"b\\s/<>&\b\f\n\r\t\x01\x1f\x7fé", `{"payload":"q\"b\\s/<>&\b\f\n\r\t\u0001\u001f` + "\x7fé" + `"}`, 0},
		{"text invalid UTF-8 replaced", "text", "a\xffb", `{"payload":"a` + "\uFFFD" + `b"}`, 0},
		{"json compact kept", "json", `{"a":"b c","n":1.50e+3}`, `{"payload":{"a":"b c","n":1.50e+3}}`, 0},
		{"json whitespace removed, order kept", "json", "\t{\r\n \"z\": 1,\n \"a\": [true, false, null] } ", `{"payload":{"z":1,"a":[true,false,null]}}`, 0},
		{"json scalar", "json", ` "s" `, `{"payload":"s"}`, 0},
		{"json invalid kept as base64", "json", `{"a":`, `{"payload":"eyJhIjo="}`, 1},
		{"json invalid UTF-8 kept as base64", "json", "\"\xff\"", `{"payload":"Iv8i"}`, 1},
		{"json empty kept as base64", "json", "", `{"payload":""}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: tt.schema})
			got, err := e.AppendRecord(nil, &Message{Payload: []byte(tt.payload)}, true)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want+"\n" {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("record is not valid JSON: %q", got)
			}
			if e.InvalidPayloads() != tt.invalid {
				t.Errorf("InvalidPayloads() = %d, want %d", e.InvalidPayloads(), tt.invalid)
			}
		})
	}
}

func TestInvalidPayloadFail(t *testing.T) {
	p := Partition{Stream: "s1", Topic: "t1", ID: 3}
	for _, format := range []Format{"json_lines", "json_array", "raw"} {
		t.Run(string(format), func(t *testing.T) {
			e := mustEncoder(t, p, Options{Format: format, Schema: "json", InvalidPayload: "fail"})
			dst := []byte("keep")
			got, err := e.AppendRecord(dst, &Message{Offset: 77, Payload: []byte("not json")}, false)
			var ipe *InvalidPayloadError
			if !errors.As(err, &ipe) {
				t.Fatalf("err = %v, want *InvalidPayloadError", err)
			}
			if !errors.Is(err, ErrInvalidJSON) {
				t.Errorf("errors.Is(err, ErrInvalidJSON) = false for %v", err)
			}
			if ipe.Stream != "s1" || ipe.Topic != "t1" || ipe.Partition != 3 || ipe.Offset != 77 {
				t.Errorf("error fields = %+v", ipe)
			}
			for _, part := range []string{`"s1"`, `"t1"`, "partition 3", "offset 77"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not name %s", err, part)
				}
			}
			if strings.Contains(err.Error(), "not json") {
				t.Errorf("error leaks payload bytes: %q", err)
			}
			if string(got) != "keep" {
				t.Errorf("dst changed on error: %q", got)
			}
			if e.InvalidPayloads() != 0 {
				t.Errorf("InvalidPayloads() = %d, want 0 under fail", e.InvalidPayloads())
			}
		})
	}
}

func TestRawFormat(t *testing.T) {
	tests := []struct {
		schema        Schema
		payload, want string
	}{
		{"json", "{ \"a\" : 1 }", `{"a":1}`},
		{"json", "nope", `"bm9wZQ=="`},
		{"text", "héllo\n", "héllo\n"},
		{"raw", "\x00\xff{ ", "\x00\xff{ "},
		{"raw", "{ \"a\" : 1 }", "{ \"a\" : 1 }"},
	}
	for _, tt := range tests {
		e := mustEncoder(t, appLogs, Options{Format: "raw", Schema: tt.schema, IncludeMetadata: true, IncludeHeaders: true})
		got, err := e.AppendRecord(nil, &Message{Offset: 9, Headers: wireHeaders(strHdr("k", "v")), Payload: []byte(tt.payload)}, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("raw/%s %q: got %q, want %q", tt.schema, tt.payload, got, tt.want)
		}
	}
}

func TestMetadataEscapingAndPartition(t *testing.T) {
	p := Partition{Stream: "a\"b\\c/é\x01", Topic: "t\xffz", ID: 4294967295}
	e := mustEncoder(t, p, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true})
	got, err := e.AppendRecord(nil, &Message{Offset: math.MaxUint64, Timestamp: 0, Payload: []byte("1")}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offset":18446744073709551615,"timestamp":"1970-01-01T00:00:00Z","stream":"a\"b\\c/é\u0001","topic":"t` + "\uFFFD" + `z","partition_id":4294967295,"payload":1}` + "\n"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestTimestampFormatting(t *testing.T) {
	tests := []struct {
		micros uint64
		want   string
	}{
		{0, "1970-01-01T00:00:00Z"},
		{ts42, "2024-03-16T14:02:31Z"},
		{ts42 + 999_999, "2024-03-16T14:02:31Z"},
		{951_782_400_000_000, "2000-02-29T00:00:00Z"},
		{253_402_300_799_999_999, "9999-12-31T23:59:59Z"},
		{253_402_300_800_000_000, "1970-01-01T00:00:00Z"},
		{math.MaxUint64, "1970-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		if got := string(appendRFC3339Seconds(nil, tt.micros)); got != tt.want {
			t.Errorf("appendRFC3339Seconds(%d) = %s, want %s", tt.micros, got, tt.want)
		}
	}
	// Agreement with package time across the whole in-range span.
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		us := r.Uint64N(253_402_300_800_000_000)
		want := time.UnixMicro(int64(us)).UTC().Format("2006-01-02T15:04:05Z")
		if got := string(appendRFC3339Seconds(nil, us)); got != want {
			t.Fatalf("appendRFC3339Seconds(%d) = %s, want %s", us, got, want)
		}
	}
}

func TestTimestampCacheFollowsMessages(t *testing.T) {
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true})
	for _, us := range []uint64{ts42, ts42 + 10, ts42 + 1_000_000, math.MaxUint64, ts42} {
		got, err := e.AppendRecord(nil, &Message{Timestamp: us, Payload: []byte("1")}, true)
		if err != nil {
			t.Fatal(err)
		}
		want := `"timestamp":"` + string(appendRFC3339Seconds(nil, us)) + `"`
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("timestamp %d: record %s lacks %s", us, got, want)
		}
	}
}

func TestNewEncoderRejectsUnknownOptions(t *testing.T) {
	tests := []struct {
		opts Options
		want string
	}{
		{Options{Format: "csv", Schema: "json"}, `unknown output format "csv"`},
		{Options{Format: "json_lines", Schema: "xml"}, `unknown schema "xml"`},
		{Options{Format: "json_lines", Schema: "json", InvalidPayload: "drop"}, `unknown invalid_payload "drop"`},
	}
	for _, tt := range tests {
		_, err := NewEncoder(appLogs, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewEncoder(%+v) = %v, want error containing %s", tt.opts, err, tt.want)
		}
	}
}

func TestExtensionAndFraming(t *testing.T) {
	tests := []struct {
		format      Format
		ext, object string
	}{
		{"json_lines", "jsonl", "{\"payload\":{\"a\":1}}\n{\"payload\":{\"b\":2}}\n"},
		{"json_array", "json", `[{"payload":{"a":1}},{"payload":{"b":2}}]`},
		{"raw", "bin", `{"a":1}{"b":2}`},
	}
	for _, tt := range tests {
		e := mustEncoder(t, appLogs, Options{Format: tt.format, Schema: "json"})
		if tt.format.Ext() != tt.ext {
			t.Errorf("%s: Ext() = %q, want %q", tt.format, tt.format.Ext(), tt.ext)
		}
		got := renderObject(t, e, []Message{{Payload: []byte(`{"a":1}`)}, {Payload: []byte(`{"b":2}`)}})
		if string(got) != tt.object {
			t.Errorf("%s: object %q, want %q", tt.format, got, tt.object)
		}
	}
}

// wrapTransformer wraps the payload as {"t":<payload>,"off":N}.
type wrapTransformer struct{ calls int }

func (w *wrapTransformer) Transform(dst, payload []byte, stream, topic string, partition uint32, offset, ts uint64) ([]byte, error) {
	w.calls++
	dst = append(dst, `{"t":`...)
	dst = append(dst, payload...)
	dst = append(dst, `,"off":`...)
	dst = append(dst, []byte(string(rune('0'+offset%10)))...)
	return append(dst, '}'), nil
}

type failingTransformer struct{ out string }

func (f failingTransformer) Transform(dst, _ []byte, _, _ string, _ uint32, _, _ uint64) ([]byte, error) {
	if f.out == "" {
		return dst, errors.New("boom")
	}
	return append(dst, f.out...), nil
}

func TestTransformer(t *testing.T) {
	tests := []struct {
		name          string
		format        Format
		schema        Schema
		payload, want string
		calls         int
	}{
		{"json object", "json_lines", "json", `{"a": 1}`, `{"payload":{"t":{"a":1},"off":5}}` + "\n", 1},
		{"json array", "json_lines", "json", `[1]`, `{"payload":{"t":[1],"off":5}}` + "\n", 1},
		{"json invalid not transformed", "json_lines", "json", `{`, `{"payload":"ew=="}` + "\n", 0},
		{"raw object", "json_lines", "raw", `{"a":1}`, `{"payload":{"t":{"a":1},"off":5}}` + "\n", 1},
		{"raw array not transformed", "json_lines", "raw", `[1]`, `{"payload":[1]}` + "\n", 0},
		{"raw binary not transformed", "json_lines", "raw", "\x01", `{"payload":"AQ=="}` + "\n", 0},
		{"text not transformed", "json_lines", "text", `{"a":1}`, `{"payload":"{\"a\":1}"}` + "\n", 0},
		{"raw format json", "raw", "json", `{"a":1}`, `{"t":{"a":1},"off":5}`, 1},
		{"raw format raw object", "raw", "raw", `{"a":1}`, `{"t":{"a":1},"off":5}`, 1},
		{"raw format raw binary", "raw", "raw", "\x01{", "\x01{", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &wrapTransformer{}
			e := mustEncoder(t, appLogs, Options{Format: tt.format, Schema: tt.schema, Transformer: tr})
			got, err := e.AppendRecord(nil, &Message{Offset: 5, Payload: []byte(tt.payload)}, true)
			if err != nil {
				t.Fatal(err)
			}
			// The transformer sees the payload compacted.
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if tr.calls != tt.calls {
				t.Errorf("transformer called %d times, want %d", tr.calls, tt.calls)
			}
		})
	}
	for _, tr := range []failingTransformer{{}, {out: `{"a":`}, {out: "oops"}} {
		e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", Transformer: tr})
		got, err := e.AppendRecord([]byte("x"), &Message{Offset: 8, Payload: []byte(`{}`)}, true)
		var te *TransformError
		if !errors.As(err, &te) || te.Offset != 8 || string(got) != "x" {
			t.Errorf("transformer %+v: got %q, err %v; want *TransformError for offset 8 and dst unchanged", tr, got, err)
		}
	}
}

func TestHeaderRenderingFollowsEachMessage(t *testing.T) {
	a := wireHeaders(strHdr("k", "a"))
	b := wireHeaders(strHdr("k", "b"))
	bad := a[:4]
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", IncludeHeaders: true})
	shared := append([]byte(nil), a...)
	steps := []struct {
		headers []byte
		want    string
	}{
		{a, `{"headers":{"k":"a"},"payload":1}`},
		{b, `{"headers":{"k":"b"},"payload":1}`},
		{bad, `{"payload":1}`},
		{bad, `{"payload":1}`},
		{shared, `{"headers":{"k":"a"},"payload":1}`},
		{nil, `{"payload":1}`},
		{shared, `{"headers":{"k":"z"},"payload":1}`}, // changed in place after step 4
	}
	for i, s := range steps {
		got, err := e.AppendRecord(nil, &Message{Headers: s.headers, Payload: []byte("1")}, true)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != s.want+"\n" {
			t.Errorf("step %d: got %s, want %s", i, got, s.want)
		}
		if i == 4 {
			shared[len(shared)-1] = 'z' // the caller reuses its buffer
		}
	}
	if e.MalformedHeaders() != 2 {
		t.Errorf("MalformedHeaders() = %d, want 2", e.MalformedHeaders())
	}
}

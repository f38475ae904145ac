package parquet

import (
	"errors"
	"strings"
	"testing"
)

const logSchema = `{"fields": [
  {"name": "level", "type": "string", "required": true},
  {"name": "status", "type": "int64"},
  {"name": "code", "type": "int32"},
  {"name": "latency", "type": "double"},
  {"name": "ok", "type": "bool"},
  {"name": "at", "type": "timestamp"},
  {"name": "raw", "type": "json"},
  {"name": "ctx", "type": {"struct": [{"name": "user", "type": "string"}, {"name": "ids", "type": {"list": "int64"}}]}},
  {"name": "spans", "type": {"list": {"struct": [{"name": "name", "type": "string", "required": true}]}}}
]}`

func TestParseSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`nope`, "invalid character"},
		{`{"fields":[]}`, `"fields" is missing or empty`},
		{`{"felds":[]}`, `unknown field "felds"`},
		{`{"fields":[{"type":"string"}]}`, `fields[0]: "name" is missing or empty`},
		{`{"fields":[{"name":"","type":"string"}]}`, `fields[0]: "name" is missing or empty`},
		{`{"fields":[{"name":"a"}]}`, `fields[0] "a": "type" is missing`},
		{`{"fields":[{"name":"a","type":"strng"}]}`, `fields[0] "a": unknown type "strng" (accepted: string, bool`},
		{`{"fields":[{"name":"a","type":"string","nullable":true}]}`, `fields[0]: json: unknown field "nullable"`},
		{`{"fields":[{"name":"a","type":"string"},{"name":"A","type":"int64"}]}`, `fields[1] "A": same name as "a" ignoring case`},
		{`{"fields":[{"name":"a","type":{"struct":[]}}]}`, `fields[0] "a": a struct needs at least one field`},
		{`{"fields":[{"name":"a","type":{"struct":[{"name":"b","type":7}]}}]}`, `fields[0] "a" > struct[0] "b": type: json: cannot unmarshal number`},
		{`{"fields":[{"name":"a","type":{"list":"uint64"}}]}`, `fields[0] "a" > list: unknown type "uint64"`},
		{`{"fields":[{"name":"a","type":{"list":"int64","struct":[]}}]}`, `either a struct or a list`},
		{`{"fields":[{"name":"a","type":{}}]}`, `empty type object`},
		{`{"fields":[{"name":"a","type":"json"}]} {}`, `data after the schema object`},
		{`{"fields":[{"name":"a","type":` + strings.Repeat(`{"list":`, 40) + `"int64"` + strings.Repeat(`}`, 40) + `}]}`, `nested deeper than 32 levels`},
	} {
		_, err := ParseSchema([]byte(tc.in))
		if err == nil || !errors.Is(err, ErrPinnedSchema) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSchema(%.60s): %v, want …%s…", tc.in, err, tc.want)
		}
	}
	if _, err := ParseSchema([]byte(logSchema)); err != nil {
		t.Fatal(err)
	}
}

func TestPinnedOptionErrors(t *testing.T) {
	s, err := ParseSchema([]byte(`{"fields":[{"name":"Offset","type":"int64"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEncoder(Options{Payload: PayloadJSON, Schema: s, IncludeMetadata: true}); err == nil || !strings.Contains(err.Error(), `"Offset" has the name of the offset column`) {
		t.Errorf("metadata clash: %v", err)
	}
	if _, err := NewEncoder(Options{Payload: PayloadJSON, Schema: s}); err != nil {
		t.Errorf("no metadata, no clash: %v", err)
	}
	if _, err := NewEncoder(Options{Payload: PayloadText, Schema: s}); err == nil {
		t.Error("pinned schema under text accepted")
	}
	p, _ := ParseSchema([]byte(`{"fields":[{"name":"payload_extra","type":"int64"}]}`))
	if _, err := NewEncoder(Options{Payload: PayloadJSON, Schema: p, KeepExtra: true}); err == nil {
		t.Error("a field named payload_extra accepted next to the extra column")
	}
	for _, o := range []Options{{Payload: "xml"}, {Payload: PayloadJSON, Compression: "lz4"}} {
		if _, err := NewEncoder(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestPinnedRejects(t *testing.T) {
	s, err := ParseSchema([]byte(logSchema))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoder(Options{Payload: PayloadJSON, Schema: s})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		payload  string
		sentinel error
		want     string
	}{
		{`{"status":1}`, ErrSchemaMismatch, `field "level": required, missing`},
		{`{"level":null}`, ErrSchemaMismatch, `field "level": required, got null`},
		{`{"level":1}`, ErrSchemaMismatch, `field "level": want string, got number`},
		{`{"level":"i","status":"200"}`, ErrSchemaMismatch, `field "status": want int64, got string`},
		{`{"level":"i","status":2.5}`, ErrSchemaMismatch, `field "status": want int64, got a number that is not one`},
		{`{"level":"i","status":9223372036854775808}`, ErrSchemaMismatch, `field "status": want int64, got a number that is not one`},
		{`{"level":"i","code":2147483648}`, ErrSchemaMismatch, `field "code": want int32, got a number out of its range`},
		{`{"level":"i","latency":"fast"}`, ErrSchemaMismatch, `field "latency": want double, got string`},
		{`{"level":"i","ok":1}`, ErrSchemaMismatch, `field "ok": want bool, got number`},
		{`{"level":"i","at":"yesterday"}`, ErrSchemaMismatch, `field "at": want an RFC 3339 timestamp`},
		{`{"level":"i","at":17}`, ErrSchemaMismatch, `field "at": want timestamp, got number`},
		{`{"level":"i","ctx":[]}`, ErrSchemaMismatch, `field "ctx": want struct, got array`},
		{`{"level":"i","ctx":{"ids":[1,"2"]}}`, ErrSchemaMismatch, `field "ctx.ids[]": want int64, got string`},
		{`{"level":"i","spans":[{"name":"a"},{}]}`, ErrSchemaMismatch, `field "spans[].name": required, missing`},
		{`[1]`, ErrSchemaMismatch, `the payload is a JSON array, not an object`},
		{`{"level":"i"`, ErrInvalidJSON, `at byte 12 of 12`},
		{`{"level":1,"x":}`, ErrInvalidJSON, `the schema does not fit it either`},
		{``, ErrInvalidJSON, `at byte 0 of 0`},
		// A \u escape the payload cuts short is refused just after the
		// "\u" (where the JSON formats say the end of the payload), in a
		// shredded string and in a json field's value alike.
		{`{"level":"\u12`, ErrInvalidJSON, `at byte 12 of 14`},
		{`{"level":"i","raw":["\u1`, ErrInvalidJSON, `at byte 23 of 24`},
	} {
		enc.Reset(Source{})
		if err := enc.Begin(&strings.Builder{}); err != nil {
			t.Fatal(err)
		}
		err := enc.Write(&Record{Offset: 9, Payload: []byte(tc.payload)})
		var re *RecordError
		if !errors.As(err, &re) || re.Offset != 9 || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v …%s…", tc.payload, err, tc.sentinel, tc.want)
		}
		if enc.Rows() != 0 {
			t.Errorf("%s: a rejected record was counted", tc.payload)
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPinnedReadBack(t *testing.T) {
	s, err := ParseSchema([]byte(logSchema))
	if err != nil {
		t.Fatal(err)
	}
	payloads := []string{
		`{"level":"info","status":200,"code":-5,"latency":1,"ok":true,"at":"2024-02-29T12:00:00.123456+01:00","raw":{"a": [1, "x"]},"ctx":{"user":"bob","ids":[1,null,3],"unknown":1},"spans":[{"name":"a"},{"name":"b","extra":2}],"other":"kept"}`,
		`{"level":"warn","raw":"s","spans":[],"ctx":null,"more":{"x":[1]},"other":2}`,
		`{"level":"error","status":"bad"}`,
		`{"level":"debug","raw":null,"ctx":{}}`,
	}
	var recs []oracleRecord
	for i, p := range payloads {
		recs = append(recs, oracleRecord{offset: uint64(i), payload: []byte(p)})
	}
	cols := [][2]string{{"level", "string"}, {"status", "int64"}, {"code", "int32"}, {"latency", "double"}, {"ok", "bool"},
		{"at", "timestamp[us, tz=UTC]"}, {"raw", "string"}, {"ctx", "struct<user: string, ids: list<element: int64>>"},
		{"spans", "list<element: struct<name: string>>"}}
	rows := [][]any{
		{"info", int64(200), int64(-5), fl(1), true, ts(1709204400123456), `{"a":[1,"x"]}`,
			map[string]any{"user": "bob", "ids": []any{int64(1), nil, int64(3)}}, []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}},
		{"warn", nil, nil, nil, nil, nil, `"s"`, nil, []any{}},
		{"debug", nil, nil, nil, nil, nil, nil, map[string]any{"user": nil, "ids": nil}, nil},
	}
	drop := &fileCase{name: "drop", opts: Options{Payload: PayloadJSON, Schema: s}, recs: recs,
		want: oracleFile{columns: cols, rows: rows, rejected: []uint64{2}}}
	extraRows := [][]any{append(append([]any{}, rows[0]...), `{"other":"kept"}`), append(append([]any{}, rows[1]...), `{"more":{"x":[1]},"other":2}`), append(append([]any{}, rows[2]...), nil)}
	keep := &fileCase{name: "keep", opts: Options{Payload: PayloadJSON, Schema: s, KeepExtra: true, IncludeHeaders: true}, recs: recs,
		want: oracleFile{columns: append(append([][2]string{{"headers", "map<string, string>"}}, cols...), [2]string{"payload_extra", "string"}), rejected: []uint64{2}}}
	for _, r := range extraRows {
		keep.want.rows = append(keep.want.rows, append([]any{nil}, r...))
	}
	checkFiles(t, []*fileCase{drop, keep})
}

package parquet

import (
	"fmt"
	"strings"
	"testing"
)

// inferCases is the inference table of doc.md: payloads in, payload columns
// out (pyarrow's spelling; JSON-text columns are "string").
var inferCases = []struct {
	name     string
	meta     bool
	payloads []string
	want     string
}{
	{"integers", false, []string{`{"a":1}`, `{"a":-2}`}, "a: int64"},
	{"integer and float", false, []string{`{"a":1}`, `{"a":2.5}`}, "a: double"},
	{"floats, exponents", false, []string{`{"a":1.0}`, `{"a":1e3}`}, "a: double"},
	{"integer beyond int64", false, []string{`{"a":18446744073709551615}`}, "a: double"},
	{"int64 and beyond", false, []string{`{"a":1}`, `{"a":-9223372036854775809}`}, "a: double"},
	{"int64 limits", false, []string{`{"a":9223372036854775807}`, `{"a":-9223372036854775808}`}, "a: int64"},
	{"bool", false, []string{`{"a":true}`, `{"a":false}`}, "a: bool"},
	{"string", false, []string{`{"a":"x"}`}, "a: string"},
	{"string and number: JSON text", false, []string{`{"a":"x"}`, `{"a":1}`}, "a: string"},
	{"object and string: JSON text", false, []string{`{"a":{"b":1}}`, `{"a":"x"}`}, "a: string"},
	{"object and array: JSON text", false, []string{`{"a":{"b":1}}`, `{"a":[1]}`}, "a: string"},
	{"bool and number: JSON text", false, []string{`{"a":true}`, `{"a":0}`}, "a: string"},
	{"null only: no column", false, []string{`{"a":null,"b":1}`}, "b: int64"},
	{"null and int", false, []string{`{"a":null}`, `{"a":3}`}, "a: int64"},
	{"missing in some records", false, []string{`{"a":1}`, `{"b":"x"}`}, "a: int64, b: string"},
	{"empty object only: no column", false, []string{`{"a":{},"b":1}`}, "b: int64"},
	{"empty array only: no column", false, []string{`{"a":[],"b":1}`}, "b: int64"},
	{"array of nulls only: no column", false, []string{`{"a":[null],"b":1}`}, "b: int64"},
	{"object of nulls only: no column", false, []string{`{"a":{"x":null},"b":1}`}, "b: int64"},
	{"empty and full object", false, []string{`{"a":{}}`, `{"a":{"x":1}}`}, "a: struct<x: int64>"},
	{"empty and full array", false, []string{`{"a":[]}`, `{"a":[1,null]}`}, "a: list<element: int64>"},
	{"struct members union", false, []string{`{"a":{"x":1}}`, `{"a":{"y":"s"}}`}, "a: struct<x: int64, y: string>"},
	{"conflict inside a struct", false, []string{`{"a":{"x":1,"y":true}}`, `{"a":{"x":"s"}}`}, "a: struct<x: string, y: bool>"},
	{"mixed array elements: JSON text", false, []string{`{"a":[1,"x",{"k":1}]}`}, "a: list<element: string>"},
	{"ints and floats in an array", false, []string{`{"a":[1,2.5]}`}, "a: list<element: double>"},
	{"array of arrays", false, []string{`{"a":[[1],[2,3],[]]}`}, "a: list<element: list<element: int64>>"},
	{"array of objects", false, []string{`{"a":[{"x":1},{"y":[true]}]}`}, "a: list<element: struct<x: int64, y: list<element: bool>>>"},
	{"names equal ignoring case", false, []string{`{"Level":"a","level":"b"}`}, "Level: string, level_2: string"},
	{"suffix taken", false, []string{`{"a":1,"A":2,"a_2":3}`}, "a: int64, A_2: int64, a_2_2: int64"},
	{"empty name", false, []string{`{"":1}`}, "_: int64"},
	{"escaped name", false, []string{`{"a\u0062":1}`}, "ab: int64"},
	{"metadata names taken", true, []string{`{"offset":1,"Timestamp":"x","topic_x":2}`},
		"offset: int64, timestamp: timestamp[us, tz=UTC], stream: string, topic: string, partition_id: int64, offset_2: int64, Timestamp_2: string, topic_x: int64"},
	{"non-object payloads: payload column", false, []string{`{"payload":1}`, `[1,2]`, `"s"`, `3`, `null`, ` true `}, "payload_2: int64, payload: string"},
	{"no field at all: payload column", false, []string{`{}`, `{"a":null}`}, "payload: string"},
	{"duplicate member: types united, first value kept", false, []string{`{"d":1,"d":"x"}`}, "d: string"},
	{"invalid JSON ignored", false, []string{`{"a":1}`, `{"a":"x",`, `{"b":1} x`}, "a: int64"},
	{"whitespace", false, []string{" \t{ \"a\" : [ 1 , 2 ] , \"b\" : { } }\r\n"}, "a: list<element: int64>"},
	{"1000 member names", false, []string{wideObject(0, 600), wideObject(600, 1000)}, "m: struct<" + wideType(1000) + ">"},
	{"more than 1000 member names: JSON text", false, []string{wideObject(0, 600), wideObject(600, 1001)}, "m: string"},
	{"more than 1000 top-level names: the rest in payload_extra", false, []string{wideTop(0, 999), wideTop(990, 1003)},
		strings.ReplaceAll(wideType(1000), "k", "t") + ", payload_extra: string"},
	{"32 levels of containers", false, []string{`{"a":` + strings.Repeat(`{"b":`, 32) + `1` + strings.Repeat(`}`, 33)},
		"a: " + strings.Repeat("struct<b: ", 32) + "int64" + strings.Repeat(">", 32)},
	{"deeper than 32 levels: JSON text", false, []string{`{"a":` + strings.Repeat(`{"b":`, 33) + `1` + strings.Repeat(`}`, 34)},
		"a: " + strings.Repeat("struct<b: ", 32) + "string" + strings.Repeat(">", 32)},
}

func TestInferTable(t *testing.T) {
	var cases []*fileCase
	for _, tc := range inferCases {
		var recs []oracleRecord
		for i, p := range tc.payloads {
			recs = append(recs, oracleRecord{offset: uint64(i), timestamp: uint64(i), payload: []byte(p)})
		}
		src := Source{Stream: "s", Topic: "t"}
		want := oracleInferred(recs, src, tc.meta, false)
		var got []string
		for _, c := range want.columns {
			got = append(got, c[0]+": "+c[1])
		}
		if g := strings.Join(got, ", "); g != tc.want {
			t.Errorf("%s: oracle says\n %s\nthe table says\n %s", tc.name, g, tc.want)
		}
		cases = append(cases, &fileCase{
			name: tc.name, opts: Options{Payload: PayloadJSON, IncludeMetadata: tc.meta}, src: src, recs: recs, want: want,
		})
	}
	checkFiles(t, cases)
}

// TestInferValues spot-checks stored values of the conflict and promotion
// rules (the readback compares all of them with the oracle too).
func TestInferValues(t *testing.T) {
	recs := []oracleRecord{
		{offset: 0, payload: []byte(`{"a":"x","n":1,"d":7,"d":"dup"}`)},
		{offset: 1, payload: []byte(`{"a": { "k" : [1, 2.50] },"n":2.5}`)},
		{offset: 2, payload: []byte(`{"a":null,"n":18446744073709551615}`)},
	}
	f := oracleInferred(recs, Source{}, false, false)
	want := [][]any{{`"x"`, fl(1), int64(7)}, {`{"k":[1,2.50]}`, fl(2.5), nil}, {nil, fl(18446744073709551615), nil}}
	if fmt.Sprint(f.rows) != fmt.Sprint(want) {
		t.Errorf("oracle rows %v, want %v", f.rows, want)
	}
	checkFiles(t, []*fileCase{{name: "values", opts: Options{Payload: PayloadJSON}, recs: recs, want: f}})
}

// wideObject is {"m":{"k<from>":1,…,"k<to-1>":1}}.
func wideObject(from, to int) string {
	var b strings.Builder
	b.WriteString(`{"m":{`)
	for k := from; k < to; k++ {
		if k > from {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":1`, k)
	}
	b.WriteString(`}}`)
	return b.String()
}

func wideType(n int) string {
	parts := make([]string, n)
	for k := range parts {
		parts[k] = fmt.Sprintf("k%d: int64", k)
	}
	return strings.Join(parts, ", ")
}

// wideTop is {"t<from>":1,…,"t<to-1>":1}.
func wideTop(from, to int) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.ReplaceAll(wideObject(from, to), `"k`, `"t`), `{"m":`), "}")
}

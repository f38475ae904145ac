package parquet

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// conformed writes payloads with fn as the Conform hook and returns the
// file and the offsets of the records Write rejected.
func conformed(t *testing.T, fn ConformFunc, payloads ...string) ([]byte, []int, error) {
	t.Helper()
	enc, err := NewEncoder(Options{Payload: PayloadJSON, IncludeMetadata: true, Conform: fn})
	if err != nil {
		t.Fatal(err)
	}
	enc.Reset(Source{Stream: "s", Topic: "t"})
	for _, p := range payloads {
		if err := enc.Observe([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := enc.Begin(&out); err != nil {
		return nil, nil, err
	}
	var rejected []int
	for i, p := range payloads {
		err := enc.Write(&Record{Offset: uint64(i), Timestamp: 1, Payload: []byte(p)})
		var re *RecordError
		switch {
		case errors.As(err, &re):
			if !errors.Is(err, ErrSchemaMismatch) {
				t.Fatalf("record %d: %v, want a schema mismatch", i, err)
			}
			rejected = append(rejected, i)
		case err != nil:
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), rejected, nil
}

func TestConform(t *testing.T) {
	payloads := []string{
		`{"n":1,"s":"a","ctx":{"user":"u1"},"tags":[1,2]}`,
		`{"n":2.5,"s":"b","ctx":{"user":7},"tags":[3]}`,
		`{"n":3,"s":"c","ctx":{"user":"u3"},"tags":["x"]}`,
	}
	// The inferred columns: n double, s string, ctx struct<user json>, tags list<json>.
	retype := func(cols map[string]Type) ConformFunc {
		return func(in []Field) ([]Field, error) {
			out := make([]Field, len(in))
			for i, f := range in {
				out[i] = f
				if t, ok := cols[f.Name]; ok {
					out[i].Type = t
				}
			}
			return out, nil
		}
	}
	long, str := Type{Kind: "int64"}, Type{Kind: "string"}
	tests := []struct {
		name     string
		fn       ConformFunc
		rejected []int
		err      string
	}{
		{"as inferred", retype(nil), nil, ""},
		{"n long: the fraction is rejected", retype(map[string]Type{"n": long}), []int{1}, ""},
		{"ctx.user string: the number is rejected", retype(map[string]Type{"ctx": {Kind: "struct", Fields: []Field{{Name: "user", Type: str}}}}), []int{1}, ""},
		{"tags list<long>: the string element is rejected", retype(map[string]Type{"tags": {Kind: "list", Elem: &long}}), []int{2}, ""},
		{"s long: every record is rejected", retype(map[string]Type{"s": long}), []int{0, 1, 2}, ""},
		{"ctx a string column: the objects are rejected", retype(map[string]Type{"ctx": str}), []int{0, 1, 2}, ""},
		{"one column left out", func(in []Field) ([]Field, error) { return in[1:], nil }, nil, "3 columns returned for 4"},
		{"a column renamed", func(in []Field) ([]Field, error) { in[0].Name = "x"; return in, nil }, nil, `returned as "x"`},
		{"an unknown type", retype(map[string]Type{"n": {Kind: "decimal"}}), nil, `unknown type "decimal"`},
		{"the hook fails", func([]Field) ([]Field, error) { return nil, errors.New("catalog down") }, nil, "catalog down"},
	}
	plain, _, err := conformed(t, nil, payloads...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file, rejected, err := conformed(t, tc.fn, payloads...)
			if tc.err != "" {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.err)) {
					t.Fatalf("Begin: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(rejected) != fmt.Sprint(tc.rejected) {
				t.Fatalf("rejected records %v, want %v", rejected, tc.rejected)
			}
			if tc.rejected == nil && !bytes.Equal(file, plain) {
				t.Fatal("conforming to the inferred types changed the file's bytes")
			}
			checkFooter(t, tc.name, file)
		})
	}
}

// TestConformSeesInferredColumns: the hook is given the columns as named
// (after the naming rules) and typed by inference, payload columns only.
func TestConformSeesInferredColumns(t *testing.T) {
	var got []Field
	_, _, err := conformed(t, func(in []Field) ([]Field, error) { got = in; return in, nil },
		`{"a":1,"A":"x","o":{"k":[true]},"z":null}`, `{"a":2,"mix":1}`, `{"mix":"y"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{a {int64 [] <nil>}} {A_2 {string [] <nil>}} {o {struct [{k {list [] 0x`
	if s := fmt.Sprint(got); len(s) < len(want) || s[:len(want)] != want {
		t.Fatalf("columns %s, want them to start %s", s, want)
	}
	if len(got) != 4 || got[3].Name != "mix" || got[3].Type.Kind != "json" || got[2].Type.Fields[0].Type.Elem.Kind != "bool" {
		t.Fatalf("columns %+v", got)
	}
}

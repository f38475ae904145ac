package parquet

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestPhases(t *testing.T) {
	enc, err := NewEncoder(Options{Payload: PayloadJSON})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := enc.Write(&Record{}); !errors.Is(err, ErrPhase) {
		t.Errorf("Write before Reset: %v", err)
	}
	if err := enc.Begin(&out); !errors.Is(err, ErrPhase) {
		t.Errorf("Begin before Reset: %v", err)
	}
	enc.Reset(Source{})
	if err := enc.Observe([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); !errors.Is(err, ErrPhase) {
		t.Errorf("Close before Begin: %v", err)
	}
	if err := enc.Begin(&out); err != nil {
		t.Fatal(err)
	}
	if err := enc.Observe([]byte(`{"b":1}`)); !errors.Is(err, ErrPhase) {
		t.Errorf("Observe after Begin: %v", err)
	}
	// A record pass 1 did not see is refused, not silently narrowed.
	err = enc.Write(&Record{Offset: 4, Payload: []byte(`{"a":1,"b":2}`)})
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `field ".b" is not in the inferred schema`) {
		t.Errorf("unobserved member: %v", err)
	}
	if err := enc.Write(&Record{Payload: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); !errors.Is(err, ErrPhase) {
		t.Errorf("second Close: %v", err)
	}
	if _, err := readFooter(out.Bytes()); err != nil {
		t.Fatal(err)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(p), nil
}

// TestWriterErrorIsFinal: an io.Writer error ends the file; it is not a
// RecordError and every later call returns it.
func TestWriterErrorIsFinal(t *testing.T) {
	enc, err := NewEncoder(Options{Payload: PayloadText, RowGroupRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	enc.Reset(Source{})
	if err := enc.Begin(&failWriter{n: 1}); err != nil {
		t.Fatal(err)
	}
	err = enc.Write(&Record{Payload: []byte("x")})
	var re *RecordError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("write error: %v", err)
	}
	if err2 := enc.Write(&Record{Payload: []byte("y")}); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("later Write: %v", err2)
	}
	if err2 := enc.Close(); err2 == nil {
		t.Error("Close after a write error succeeded")
	}
}

// TestRejectedLeavesNoTrace: a file with rejected records in between is
// byte-identical to one written without them (their partial values and
// dictionary entries are rolled back).
func TestRejectedLeavesNoTrace(t *testing.T) {
	s, err := ParseSchema([]byte(logSchema))
	if err != nil {
		t.Fatal(err)
	}
	good := []string{`{"level":"info","status":1,"raw":"x","ctx":{"user":"a","ids":[1]}}`, `{"level":"warn","spans":[{"name":"n"}]}`}
	bad := []string{`{"level":"NEW-VALUE","status":"x"}`, `{"level":"other","ctx":{"user":"u-new","ids":[1,"x"]}}`, `{"level":"y","raw":{"a":1},"spans":[{"name":"m"},{}]}`}
	for _, codec := range codecs {
		opts := Options{Payload: PayloadJSON, Schema: s, Compression: codec}
		var clean, mixed []oracleRecord
		for i, p := range good {
			clean = append(clean, oracleRecord{offset: uint64(i), payload: []byte(p)})
			mixed = append(mixed, oracleRecord{offset: uint64(i), payload: []byte(p)})
			for _, b := range bad {
				mixed = append(mixed, oracleRecord{offset: 99, payload: []byte(b)})
			}
		}
		e1, _ := NewEncoder(opts)
		e2, _ := NewEncoder(opts)
		a, _ := encodeAll(t, e1, Source{}, clean)
		b, rejected := encodeAll(t, e2, Source{}, mixed)
		if len(rejected) != 2*len(bad) {
			t.Errorf("%s: %d rejected, want %d", codec, len(rejected), 2*len(bad))
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: rejected records changed the file", codec)
		}
	}
}

// TestHeaderEdgeCases: unsorted, duplicate and ill-formed keys, and a file
// without rows, read back by both readers.
func TestHeaderEdgeCases(t *testing.T) {
	h := func(k, v string) Header { return Header{Key: []byte(k), Value: []byte(v)} }
	recs := []oracleRecord{
		{offset: 0, headers: []Header{h("b", "1"), h("a", "2"), h("b", "3")}, payload: []byte(`{"x":1}`)},
		{offset: 1, headers: []Header{h("k\xff", "first"), h("k\xfe", "second \xff")}, payload: []byte(`{"x":2}`)},
		{offset: 2, headers: []Header{}, payload: []byte(`{"x":3}`)},
		{offset: 3, payload: []byte(`{"x":4}`)},
	}
	c := &fileCase{name: "headers", opts: Options{Payload: PayloadJSON, IncludeHeaders: true}, recs: recs}
	c.want.columns = [][2]string{{"headers", "map<string, string>"}, {"x", "int64"}}
	c.want.rows = [][]any{
		{pairs{{"a", "2"}, {"b", "3"}}, int64(1)},
		{pairs{{"k\uFFFD", "second \uFFFD"}}, int64(2)},
		{pairs{}, int64(3)},
		{nil, int64(4)},
	}
	empty := &fileCase{name: "no rows", opts: Options{Payload: PayloadJSON, IncludeMetadata: true}}
	empty.want.columns = [][2]string{{"offset", "int64"}, {"timestamp", "timestamp[us, tz=UTC]"}, {"stream", "string"}, {"topic", "string"}, {"partition_id", "int64"}}
	checkFiles(t, []*fileCase{c, empty})
}

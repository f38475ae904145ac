package parquet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// encodeAll runs both passes over recs in memory and returns the file and
// the offsets Write rejected.
func encodeAll(t testing.TB, enc *Encoder, src Source, recs []oracleRecord) ([]byte, []uint64) {
	t.Helper()
	var out bytes.Buffer
	enc.Reset(src)
	for _, r := range recs {
		if err := enc.Observe(r.payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Begin(&out); err != nil {
		t.Fatal(err)
	}
	var rejected []uint64
	for _, r := range recs {
		err := enc.Write(&Record{Offset: r.offset, Timestamp: r.timestamp, Headers: r.headers, Payload: r.payload})
		var re *RecordError
		switch {
		case errors.As(err, &re):
			rejected = append(rejected, re.Offset)
		case err != nil:
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), rejected
}

// readerSide is what one reader saw of a file.
type readerSide struct {
	Error     string      `json:"error"`
	Columns   [][2]string `json:"columns"`
	Rows      [][]any     `json:"rows"`
	Leaves    [][]any     `json:"leaves"`
	RowGroups int         `json:"row_groups"`
	CreatedBy string      `json:"created_by"`
}

type readback struct {
	File    string     `json:"file"`
	PyArrow readerSide `json:"pyarrow"`
	DuckDB  readerSide `json:"duckdb"`
}

// readBack reads files with pyarrow and DuckDB (testdata/readback.py in the
// venv that scripts/parquet-readers.sh installs): skipped locally when the
// venv is missing, a failure in CI.
func readBack(t *testing.T, files []string) map[string]readback {
	t.Helper()
	py := testenv.RequireTool(t, filepath.Join("pyenv-parquet", "bin", "python"))
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", "readback.py")}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readback.py: %v\n%s", err, stderr.String())
	}
	res := map[string]readback{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var rb readback
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&rb); err != nil {
			t.Fatalf("readback.py output: %v", err)
		}
		res[rb.File] = rb
	}
	return res
}

// fileCase is one file to write and check against the oracle.
type fileCase struct {
	name string
	opts Options
	src  Source
	recs []oracleRecord
	want oracleFile
	path string
	data []byte
}

// checkFiles writes every case, reads all files back with both readers in
// one run, and compares columns, types and every value with the oracle.
func checkFiles(t *testing.T, cases []*fileCase) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, c := range cases {
		enc, err := NewEncoder(c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		data, rejected := encodeAll(t, enc, c.src, c.recs)
		if fmt.Sprint(rejected) != fmt.Sprint(c.want.rejected) {
			t.Errorf("%s: rejected offsets %v, want %v", c.name, rejected, c.want.rejected)
		}
		checkFooter(t, c.name, data)
		c.data = data
		c.path = filepath.Join(dir, fmt.Sprintf("case%03d.parquet", i))
		if err := os.WriteFile(c.path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, c.path)
	}
	got := readBack(t, paths)
	for _, c := range cases {
		rb, ok := got[c.path]
		if !ok {
			t.Errorf("%s: no readback", c.name)
			continue
		}
		for _, side := range []struct {
			name string
			r    readerSide
		}{{"pyarrow", rb.PyArrow}, {"duckdb", rb.DuckDB}} {
			compareSide(t, c, side.name, side.r)
		}
		if rb.PyArrow.CreatedBy != CreatedBy {
			t.Errorf("%s: created_by %q", c.name, rb.PyArrow.CreatedBy)
		}
	}
}

func compareSide(t *testing.T, c *fileCase, reader string, r readerSide) {
	t.Helper()
	if r.Error != "" {
		t.Errorf("%s: %s cannot read the file: %s", c.name, reader, r.Error)
		return
	}
	if fmt.Sprint(r.Columns) != fmt.Sprint(c.want.columns) {
		t.Errorf("%s: %s columns\n got %v\nwant %v", c.name, reader, r.Columns, c.want.columns)
		return
	}
	if len(r.Rows) != len(c.want.rows) {
		t.Errorf("%s: %s read %d rows, want %d", c.name, reader, len(r.Rows), len(c.want.rows))
		return
	}
	bad := 0
	for i, row := range c.want.rows {
		for j, exp := range row {
			if err := sameValue(exp, r.Rows[i][j]); err != nil {
				t.Errorf("%s: %s row %d column %s: %v", c.name, reader, i, c.want.columns[j][0], err)
				if bad++; bad > 5 {
					return
				}
			}
		}
	}
}

// checkFooter parses the footer with the test reader and checks every
// schema element is a type Athena reads.
func checkFooter(t *testing.T, name string, data []byte) *footer {
	t.Helper()
	f, err := readFooter(data)
	if err != nil {
		t.Fatalf("%s: footer: %v", name, err)
	}
	for _, e := range f.schema {
		if p := athenaProblem(e); p != "" {
			t.Errorf("%s: not an Athena type: %s", name, p)
		}
	}
	return f
}

func TestReadBackGenerated(t *testing.T) {
	src := Source{Stream: "orders", Topic: "eu-west", Partition: 7}
	recs := genRecords(1, 1000)
	var cases []*fileCase
	for _, codec := range []string{"zstd", "snappy", "gzip", "none"} {
		for _, small := range []bool{false, true} {
			opts := Options{Payload: PayloadJSON, IncludeMetadata: true, IncludeHeaders: true, Compression: codec}
			if small {
				// Many pages, row groups and dictionary fallbacks.
				opts.PageBytes, opts.RowGroupRows, opts.DictionaryBytes = 2<<10, 222, 1<<10
			}
			cases = append(cases, &fileCase{
				name: fmt.Sprintf("%s/small=%v", codec, small), opts: opts, src: src, recs: recs,
				want: oracleInferred(recs, src, true, true),
			})
		}
	}
	for _, meta := range []bool{false, true} {
		for _, hdr := range []bool{false, true} {
			opts := Options{Payload: PayloadJSON, IncludeMetadata: meta, IncludeHeaders: hdr}
			cases = append(cases, &fileCase{
				name: fmt.Sprintf("meta=%v/headers=%v", meta, hdr), opts: opts, src: src, recs: recs[:300],
				want: oracleInferred(recs[:300], src, meta, hdr),
			})
		}
	}
	checkFiles(t, cases)
	if f := cases[1]; !strings.Contains(f.name, "small=true") || len(mustFooter(t, f.data).groups) < 4 {
		t.Errorf("the small case wrote %d row groups, want several", len(mustFooter(t, f.data).groups))
	}
}

func mustFooter(t *testing.T, data []byte) *footer {
	f, err := readFooter(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadBackTextAndRaw(t *testing.T) {
	src := Source{Stream: "s\xffx", Topic: "t", Partition: 0}
	payloads := [][]byte{[]byte("plain"), []byte("bad \xe2\x82 utf8"), {}, {0, 1, 2, 0xff}, []byte(`{"a":1}`)}
	var recs []oracleRecord
	for i, p := range payloads {
		recs = append(recs, oracleRecord{offset: uint64(i), timestamp: uint64(i) * 1e6, payload: p})
	}
	row := func(r oracleRecord, v any) []any {
		return []any{int64(r.offset), ts(r.timestamp), "s\uFFFDx", "t", int64(0), v}
	}
	cols := [][2]string{{"offset", "int64"}, {"timestamp", "timestamp[us, tz=UTC]"}, {"stream", "string"}, {"topic", "string"}, {"partition_id", "int64"}}
	text := &fileCase{name: "text", opts: Options{Payload: PayloadText, IncludeMetadata: true}, src: src, recs: recs}
	text.want.columns = append(cols, [2]string{"payload", "string"})
	raw := &fileCase{name: "raw", opts: Options{Payload: PayloadRaw, IncludeMetadata: true}, src: src, recs: recs}
	raw.want.columns = append(cols, [2]string{"payload", "binary"})
	for _, r := range recs {
		text.want.rows = append(text.want.rows, row(r, string(jsonscan.AppendLossy(nil, r.payload))))
		raw.want.rows = append(raw.want.rows, row(r, bin(r.payload)))
	}
	checkFiles(t, []*fileCase{text, raw})
}

package parquet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt")

var codecs = []string{CompressionZstd, CompressionSnappy, CompressionGzip, CompressionNone}

// chunkWriter takes each Write in pieces of varying size, as a multipart
// upload pipe might.
type chunkWriter struct {
	buf   bytes.Buffer
	calls int
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.calls++
	n0 := len(p)
	for len(p) > 0 {
		n := min(len(p), 1+w.calls%7*997)
		w.buf.Write(p[:n])
		p = p[n:]
	}
	return n0, nil
}

// streamEncode is the big-object path: pass 1 reads the range, pass 2
// re-reads it (fresh copies each time, through one reused payload buffer,
// as a source that re-polls Iggy would hand them over).
func streamEncode(t *testing.T, enc *Encoder, src Source, recs []oracleRecord, w io.Writer) {
	t.Helper()
	reread := func(fn func(*Record)) {
		var payload []byte
		for _, r := range recs {
			payload = append(payload[:0], r.payload...)
			fn(&Record{Offset: r.offset, Timestamp: r.timestamp, Headers: r.headers, Payload: payload})
			for i := range payload {
				payload[i] = 'x' // the source reuses its buffer
			}
		}
	}
	enc.Reset(src)
	reread(func(r *Record) {
		if err := enc.Observe(r.Payload); err != nil {
			t.Fatal(err)
		}
	})
	if err := enc.Begin(w); err != nil {
		t.Fatal(err)
	}
	reread(func(r *Record) {
		if err := enc.Write(r); err != nil && !strings.Contains(err.Error(), "record at offset") {
			t.Fatal(err)
		}
	})
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDeterministicBytes(t *testing.T) {
	src := Source{Stream: "s", Topic: "t", Partition: 3}
	recs := genRecords(7, 1200)
	other := genRecords(8, 300)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			opts := Options{Payload: PayloadJSON, IncludeMetadata: true, IncludeHeaders: true, Compression: codec,
				PageBytes: 4 << 10, RowGroupRows: 400, DictionaryBytes: 2 << 10}
			fresh := func() *Encoder {
				e, err := NewEncoder(opts)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			first, _ := encodeAll(t, fresh(), src, recs)
			second, _ := encodeAll(t, fresh(), src, recs)

			reused := fresh()
			encodeAll(t, reused, src, other) // a different object first
			third, _ := encodeAll(t, reused, src, recs)

			var chunked chunkWriter
			streamEncode(t, reused, src, recs, &chunked)

			prev := runtime.GOMAXPROCS(1)
			single, _ := encodeAll(t, fresh(), src, recs)
			runtime.GOMAXPROCS(prev)

			for name, got := range map[string][]byte{
				"second": second, "reused": third, "streamed+chunked": chunked.buf.Bytes(), "GOMAXPROCS=1": single,
			} {
				if !bytes.Equal(first, got) {
					t.Errorf("%s: %d bytes differ from the first write's %d", name, len(got), len(first))
				}
			}
			if n := len(mustFooter(t, first).groups); n != 3 {
				t.Errorf("%d row groups, want 3", n)
			}
		})
	}
}

// TestGolden pins the bytes of a small file per codec: a change in them
// must come with a new CreatedBy version, since objects under recovery are
// re-rendered and compared byte for byte (run with -update to accept).
func TestGolden(t *testing.T) {
	src := Source{Stream: "golden", Topic: "t", Partition: 1}
	recs := genRecords(42, 300)
	var b strings.Builder
	fmt.Fprintf(&b, "# sha256 of the files TestGolden writes; created_by %q\n", CreatedBy)
	for _, codec := range codecs {
		for _, small := range []bool{false, true} {
			opts := Options{Payload: PayloadJSON, IncludeMetadata: true, IncludeHeaders: true, Compression: codec}
			if small {
				opts.PageBytes, opts.RowGroupRows, opts.DictionaryBytes = 1<<10, 100, 512
			}
			enc, err := NewEncoder(opts)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := encodeAll(t, enc, src, recs)
			sum := sha256.Sum256(data)
			fmt.Fprintf(&b, "%s small=%v %d %s\n", codec, small, len(data), hex.EncodeToString(sum[:]))
		}
	}
	path := filepath.Join("testdata", "golden.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update)", err)
	}
	if string(want) != b.String() {
		t.Errorf("output bytes changed: bump CreatedBy, then go test -run TestGolden -update\n got:\n%s\nwant:\n%s", b.String(), want)
	}
}

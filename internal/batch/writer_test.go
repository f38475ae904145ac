package batch

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

func decompress(t *testing.T, compression Compression, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch compression {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("gzip reader: %v", err)
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("zstd reader: %v", err)
		}
		defer zr.Close()
		r = zr
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s decompress: %v", compression, err)
	}
	return out
}

func TestObjectWriterMatchesAccumulator(t *testing.T) {
	msgs := varied(3000, 5) // ~450 KB: several internal flushes
	for _, format := range []Format{"json_lines", "json_array", "raw"} {
		e := mustEncoder(t, appLogs, Options{Format: format, Schema: "json", IncludeMetadata: true})
		want := renderObject(t, e, msgs)
		for _, comp := range []Compression{"none", "", "gzip", "zstd"} {
			var buf bytes.Buffer
			w, err := NewObjectWriter(&buf, e, comp)
			if err != nil {
				t.Fatal(err)
			}
			for i := range msgs {
				if err := w.Write(&msgs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if w.Len() != len(msgs) {
				t.Errorf("Len() = %d, want %d", w.Len(), len(msgs))
			}
			if got := decompress(t, comp, buf.Bytes()); !bytes.Equal(got, want) {
				t.Errorf("%s/%q: streamed object (%d bytes) differs from rendered (%d bytes)", format, comp, len(got), len(want))
			}
			if err := w.Write(&msgs[0]); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Close = %v, want ErrClosed", err)
			}
		}
	}
}

func TestObjectWriterEmptyObject(t *testing.T) {
	e := mustEncoder(t, appLogs, Options{Format: "json_array", Schema: "json"})
	var buf bytes.Buffer
	w, err := NewObjectWriter(&buf, e, "none")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil || buf.String() != "[]" {
		t.Errorf("empty object = %q, %v; want [] and nil", buf.String(), err)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestObjectWriterErrors(t *testing.T) {
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", InvalidPayload: "fail"})
	if _, err := NewObjectWriter(io.Discard, e, "lz4"); err == nil || !strings.Contains(err.Error(), `"lz4"`) {
		t.Errorf("unknown compression: err = %v", err)
	}
	boom := errors.New("pipe closed")
	for _, comp := range []Compression{"none", "gzip", "zstd"} {
		w, err := NewObjectWriter(failWriter{boom}, e, comp)
		if err != nil {
			t.Fatal(err)
		}
		big := &Message{Payload: []byte(`"` + strings.Repeat("a", 200<<10) + `"`)}
		err = w.Write(big)
		if err == nil {
			err = w.Close()
		} else if cerr := w.Close(); !errors.Is(cerr, boom) {
			t.Errorf("%s: Close after failed write = %v, want the write error", comp, cerr)
		}
		if !errors.Is(err, boom) {
			t.Errorf("%s: error = %v, want one wrapping %v", comp, err, boom)
		}
	}
	w, _ := NewObjectWriter(io.Discard, e, "none")
	err := w.Write(&Message{Offset: 3, Payload: []byte("{")})
	var ipe *InvalidPayloadError
	if !errors.As(err, &ipe) || ipe.Offset != 3 {
		t.Errorf("invalid payload under fail: %v", err)
	}
	if err2 := w.Write(&Message{Payload: []byte("1")}); !errors.Is(err2, ErrInvalidJSON) {
		t.Errorf("Write after an error = %v, want the first error again", err2)
	}
}

func TestCompressRoundTrip(t *testing.T) {
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true})
	obj := renderObject(t, e, varied(500, 6))
	for _, comp := range []Compression{"none", "", "gzip", "zstd"} {
		prefix := []byte("keep:")
		out, err := Compress(prefix, obj, comp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(out, []byte("keep:")) {
			t.Errorf("%q: dst prefix lost", comp)
		}
		body := out[len("keep:"):]
		if got := decompress(t, comp, body); !bytes.Equal(got, obj) {
			t.Errorf("%q: round trip differs", comp)
		}
		if (comp == "gzip" || comp == "zstd") && len(body) >= len(obj)/2 {
			t.Errorf("%q: %d -> %d bytes: JSON lines barely compressed", comp, len(obj), len(body))
		}
	}
	if _, err := Compress(nil, obj, "brotli"); err == nil || !strings.Contains(err.Error(), `"brotli"`) {
		t.Errorf("unknown compression: %v", err)
	}
}

func TestCompressConcurrent(t *testing.T) {
	src := bytes.Repeat([]byte(`{"a":"bcd"}`+"\n"), 5000)
	done := make(chan error)
	for g := range 4 {
		go func() {
			comp := []Compression{"gzip", "zstd"}[g%2]
			for range 5 {
				out, err := Compress(nil, src, comp)
				if err != nil {
					done <- err
					return
				}
				if got := decompressNoT(comp, out); !bytes.Equal(got, src) {
					done <- errors.New(string(comp) + ": concurrent round trip differs")
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func decompressNoT(comp Compression, b []byte) []byte {
	if comp == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil
		}
		out, _ := io.ReadAll(zr)
		return out
	}
	zr, err := zstd.NewReader(nil)
	if err != nil {
		return nil
	}
	defer zr.Close()
	out, _ := zr.DecodeAll(b, nil)
	return out
}

func TestNamesForCompressionAndFormat(t *testing.T) {
	tests := []struct {
		comp     Compression
		ext, enc string
	}{
		{"none", "", ""}, {"gzip", "gz", "gzip"}, {"zstd", "zst", "zstd"},
	}
	for _, tt := range tests {
		if tt.comp.Ext() != tt.ext || tt.comp.ContentEncoding() != tt.enc {
			t.Errorf("%s: ext %q enc %q, want %q %q", tt.comp, tt.comp.Ext(), tt.comp.ContentEncoding(), tt.ext, tt.enc)
		}
	}
	types := map[Format]string{"json_lines": "application/x-ndjson", "json_array": "application/json", "raw": "application/octet-stream"}
	for format, want := range types {
		if got := format.ContentType(); got != want {
			t.Errorf("ContentType(%s) = %s, want %s", format, got, want)
		}
	}
}

// TestCompressedBytesSameOnEveryPath: the same records and configuration
// give the same stored bytes whether the object was built in memory and
// compressed at once (Compress) or streamed through an ObjectWriter, and
// whatever the sizes of the writes the compressor saw. Recovery re-renders
// an object and fenced writes compare it byte for byte with what S3 holds.
func TestCompressedBytesSameOnEveryPath(t *testing.T) {
	for _, n := range []int{1, 40, 3000} { // one block, a few, several 128 KiB blocks
		msgs := varied(n, 9)
		for _, format := range []Format{"json_lines", "json_array", "raw"} {
			e := mustEncoder(t, appLogs, Options{Format: format, Schema: "json", IncludeMetadata: true})
			plain := renderObject(t, e, msgs)
			for _, comp := range []Compression{"none", "gzip", "zstd"} {
				inMemory, err := Compress(nil, plain, comp)
				if err != nil {
					t.Fatal(err)
				}
				var streamed bytes.Buffer
				w, err := NewObjectWriter(&streamed, e, comp)
				if err != nil {
					t.Fatal(err)
				}
				for i := range msgs {
					if err := w.Write(&msgs[i]); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(streamed.Bytes(), inMemory) {
					t.Errorf("%d messages %s/%s: streamed %d bytes, in memory %d bytes", n, format, comp, streamed.Len(), len(inMemory))
				}
				again, err := Compress(make([]byte, 0, 7), plain, comp)
				if err != nil || !bytes.Equal(again, inMemory) {
					t.Errorf("%d messages %s/%s: a second Compress differs", n, format, comp)
				}
			}
		}
	}
}

func TestEmptyObject(t *testing.T) {
	for _, format := range []Format{FormatJSONLines, FormatJSONArray, FormatRaw} {
		e := mustEncoder(t, appLogs, Options{Format: format, Schema: "json"})
		for _, comp := range []Compression{CompressionNone, CompressionGzip, CompressionZstd} {
			got, ok := EmptyObject(ObjectExt(format, comp))
			if !ok {
				t.Fatalf("EmptyObject(%s) = false", ObjectExt(format, comp))
			}
			var buf bytes.Buffer
			w, err := NewObjectWriter(&buf, e, comp)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%s: EmptyObject %q, an ObjectWriter with no records %q", ObjectExt(format, comp), got, buf.Bytes())
			}
		}
	}
	for _, bad := range []string{"parquet.zst", "parquet.gz", "jsonl.lz4", "txt", ""} {
		if _, ok := EmptyObject(bad); ok {
			t.Errorf("EmptyObject(%q) = true", bad)
		}
	}
}

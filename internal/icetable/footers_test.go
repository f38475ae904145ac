package icetable

import (
	"bytes"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// memIO serves files from memory and counts the reads that reach it.
type memIO struct {
	iceio.IO
	files map[string][]byte
	reads atomic.Int64
}

func (m *memIO) Open(name string) (iceio.File, error) {
	b, ok := m.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{Reader: bytes.NewReader(b), io: m, name: name}, nil
}

type memFile struct {
	*bytes.Reader
	io   *memIO
	name string
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.io.reads.Add(1)
	return f.Reader.ReadAt(p, off)
}
func (f *memFile) Stat() (fs.FileInfo, error) { return fileInfo{name: f.name, size: f.Size()}, nil }
func (f *memFile) Close() error               { return nil }

// TestFooterReadOnce: a file's footer read for its schema is not fetched
// again when the file is opened a second time (to build its data file).
func TestFooterReadOnce(t *testing.T) {
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, IncludeMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	enc.Reset(parquet.Source{Stream: "s", Topic: "t"})
	for range 3 {
		enc.Observe([]byte(`{"a":1,"b":"x"}`))
	}
	var buf bytes.Buffer
	if err := enc.Begin(&buf); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := enc.Write(&parquet.Record{Offset: uint64(i), Timestamp: 1, Payload: []byte(`{"a":1,"b":"x"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	inner := &memIO{files: map[string][]byte{"f.parquet": buf.Bytes()}}
	cached := newFooterIO(inner)
	footer := func() int {
		f, err := cached.Open("f.parquet")
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := file.NewParquetReader(f)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Close()
		return int(rdr.NumRows())
	}
	if n := footer(); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
	first := inner.reads.Load()
	if first == 0 {
		t.Fatal("the first open read nothing from the store")
	}
	if n := footer(); n != 3 {
		t.Fatalf("%d rows, want 3", n)
	}
	if again := inner.reads.Load() - first; again != 0 {
		t.Fatalf("the second open fetched %d ranges again", again)
	}
	if _, err := cached.Open("missing"); err != nil {
		t.Fatalf("Open is lazy: %v", err)
	}
	f, _ := cached.Open("missing")
	if _, err := f.ReadAt(make([]byte, 4), 0); err == nil {
		t.Fatal("reading a missing file succeeded")
	}
}

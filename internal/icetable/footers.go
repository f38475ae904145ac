package icetable

import (
	"errors"
	"io"
	"io/fs"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// footerIO keeps the ranges read from each file, so that a footer read
// for the file's schema is not fetched again to build its data file (each
// fetch is a round trip to the store).
type footerIO struct {
	iceio.IO
	mu    sync.Mutex
	files map[string]*readRanges
}

// readRanges are the bytes read from one file: its size and ranges.
type readRanges struct {
	mu     sync.Mutex
	size   int64 // -1 until known
	ranges map[[2]int64][]byte
}

func newFooterIO(inner iceio.IO) *footerIO {
	return &footerIO{IO: inner, files: map[string]*readRanges{}}
}

func (c *footerIO) Open(name string) (iceio.File, error) {
	c.mu.Lock()
	rr := c.files[name]
	if rr == nil {
		rr = &readRanges{size: -1, ranges: map[[2]int64][]byte{}}
		c.files[name] = rr
	}
	c.mu.Unlock()
	return &cachedFile{io: c.IO, name: name, rr: rr}, nil
}

// cachedFile reads through rr, opening the file itself only on a miss.
type cachedFile struct {
	io    iceio.IO
	name  string
	rr    *readRanges
	inner iceio.File
	pos   int64
}

func (f *cachedFile) open() (iceio.File, error) {
	if f.inner == nil {
		in, err := f.io.Open(f.name)
		if err != nil {
			return nil, err
		}
		f.inner = in
	}
	return f.inner, nil
}

func (f *cachedFile) Size() (int64, error) {
	f.rr.mu.Lock()
	size := f.rr.size
	f.rr.mu.Unlock()
	if size >= 0 {
		return size, nil
	}
	in, err := f.open()
	if err != nil {
		return 0, err
	}
	st, err := in.Stat()
	if err != nil {
		return 0, err
	}
	f.rr.mu.Lock()
	f.rr.size = st.Size()
	f.rr.mu.Unlock()
	return st.Size(), nil
}

func (f *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	k := [2]int64{off, int64(len(p))}
	f.rr.mu.Lock()
	b, ok := f.rr.ranges[k]
	f.rr.mu.Unlock()
	if ok {
		n := copy(p, b)
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	in, err := f.open()
	if err != nil {
		return 0, err
	}
	n, err := in.ReadAt(p, off)
	if err == nil || (errors.Is(err, io.EOF) && n > 0) {
		f.rr.mu.Lock()
		f.rr.ranges[k] = append([]byte(nil), p[:n]...)
		f.rr.mu.Unlock()
	}
	return n, err
}

func (f *cachedFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *cachedFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		size, err := f.Size()
		if err != nil {
			return 0, err
		}
		offset += size
	}
	if offset < 0 {
		return 0, errors.New("icetable: seek before the start of " + f.name)
	}
	f.pos = offset
	return offset, nil
}

func (f *cachedFile) Stat() (fs.FileInfo, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	return fileInfo{name: f.name, size: size}, nil
}

func (f *cachedFile) Close() error {
	if f.inner != nil {
		return f.inner.Close()
	}
	return nil
}

type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

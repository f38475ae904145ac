package batch

import (
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression is how a whole object is compressed (plugin_config
// compression); "" means none.
type Compression string

// Object compressions.
const (
	CompressionNone Compression = "none"
	CompressionGzip Compression = "gzip"
	CompressionZstd Compression = "zstd"
)

// Ext is the object name suffix for c: "", "gz" or "zst".
func (c Compression) Ext() string {
	switch c {
	case CompressionGzip:
		return "gz"
	case CompressionZstd:
		return "zst"
	}
	return ""
}

// ContentEncoding is the HTTP Content-Encoding for c: "", "gzip" or "zstd".
func (c Compression) ContentEncoding() string {
	switch c {
	case CompressionGzip:
		return "gzip"
	case CompressionZstd:
		return "zstd"
	}
	return ""
}

// ObjectExt is the extension of objects in format f compressed with c,
// without the leading dot: "jsonl", "json.zst", ...
func ObjectExt(f Format, c Compression) string {
	if z := c.Ext(); z != "" {
		return f.Ext() + "." + z
	}
	return f.Ext()
}

func checkCompression(compression Compression) error {
	switch compression {
	case "", CompressionNone, CompressionGzip, CompressionZstd:
		return nil
	}
	return fmt.Errorf("batch: unknown compression %q (accepted: none, gzip, zstd)", compression)
}

// appendWriter is an io.Writer that appends to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// gzipSink pairs a gzip writer with the appendWriter it writes to, so that a
// pooled pair is reused without allocating.
type gzipSink struct {
	zw  *gzip.Writer
	out appendWriter
}

var gzipPool = sync.Pool{New: func() any {
	s := &gzipSink{}
	s.zw = gzip.NewWriter(&s.out)
	return s
}}

// zstdStreams holds the streaming encoders of both Compress and ObjectWriter.
// One encoder type with one goroutine (a predictable footprint inside a
// Lambda) and no Flush: its blocks are cut by size alone, so the bytes do
// not depend on how the input was split into writes, and an object built in
// memory compresses to exactly the bytes of the same object streamed
// (EncodeAll frames its input differently).
var zstdStreams = sync.Pool{New: func() any {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	return enc
}}

// Compress appends src compressed with compression ("none", "gzip" or
// "zstd") to dst; encoders are pooled, so repeated calls are cheap.
func Compress(dst, src []byte, compression Compression) ([]byte, error) {
	switch compression {
	case "", CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		s := gzipPool.Get().(*gzipSink)
		s.out.b = dst
		s.zw.Reset(&s.out)
		_, err := s.zw.Write(src)
		if cerr := s.zw.Close(); err == nil {
			err = cerr
		}
		out := s.out.b
		s.out.b = nil
		gzipPool.Put(s)
		if err != nil {
			return dst, fmt.Errorf("batch: gzip: %w", err)
		}
		return out, nil
	case CompressionZstd:
		out := appendWriter{b: dst}
		zw, release, err := newCompressor(&out, compression)
		if err != nil {
			return dst, err
		}
		defer release()
		_, err = zw.Write(src)
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return dst, fmt.Errorf("batch: zstd: %w", err)
		}
		return out.b, nil
	}
	return dst, checkCompression(compression)
}

// newCompressor wraps w for streaming; release returns pooled state.
func newCompressor(w io.Writer, compression Compression) (io.WriteCloser, func(), error) {
	switch compression {
	case CompressionGzip:
		s := gzipPool.Get().(*gzipSink)
		s.zw.Reset(w)
		return s.zw, func() {
			s.zw.Reset(&s.out)
			gzipPool.Put(s)
		}, nil
	case CompressionZstd:
		v := zstdStreams.Get()
		enc, ok := v.(*zstd.Encoder)
		if !ok {
			return nil, nil, fmt.Errorf("batch: zstd: %w", v.(error))
		}
		enc.Reset(w)
		return enc, func() {
			enc.Reset(nil)
			zstdStreams.Put(enc)
		}, nil
	}
	return nil, nil, checkCompression(compression)
}

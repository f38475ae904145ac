package parquet

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Column chunk compressions (Options.Compression).
const (
	CompressionZstd   = "zstd"
	CompressionSnappy = "snappy"
	CompressionGzip   = "gzip"
	CompressionNone   = "none"
)

// zstdLevel and gzipLevel are fixed: the bytes of a file must not depend on
// anything but the records and the options.
const (
	zstdLevel = zstd.SpeedDefault
	gzipLevel = 6
)

// compressor compresses pages with one codec. Every codec runs in the
// calling goroutine (zstd with concurrency 1), so output never depends on
// GOMAXPROCS or timing.
type compressor struct {
	codec int32
	zenc  *zstd.Encoder
	gz    *gzip.Writer
	gzbuf bytes.Buffer
}

func newCompressor(name string) (*compressor, error) {
	c := &compressor{}
	switch name {
	case "", CompressionZstd:
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstdLevel),
			zstd.WithEncoderCRC(false),
			zstd.WithZeroFrames(true))
		if err != nil {
			return nil, fmt.Errorf("parquet: zstd: %w", err)
		}
		c.codec, c.zenc = codecZstd, enc
	case CompressionSnappy:
		c.codec = codecSnappy
	case CompressionGzip:
		gz, err := gzip.NewWriterLevel(&c.gzbuf, gzipLevel)
		if err != nil {
			return nil, fmt.Errorf("parquet: gzip: %w", err)
		}
		c.codec, c.gz = codecGzip, gz
	case CompressionNone:
		c.codec = codecUncompressed
	default:
		return nil, fmt.Errorf("parquet: unknown compression %q (accepted: zstd, snappy, gzip, none)", name)
	}
	return c, nil
}

// compress appends src compressed to dst.
func (c *compressor) compress(dst, src []byte) []byte {
	switch c.codec {
	case codecZstd:
		return c.zenc.EncodeAll(src, dst)
	case codecSnappy:
		need := s2.MaxEncodedLen(len(src))
		dst = grow(dst, need)
		out := s2.EncodeSnappy(dst[len(dst):len(dst)+need], src)
		return dst[:len(dst)+len(out)]
	case codecGzip:
		c.gzbuf.Reset()
		c.gz.Reset(&c.gzbuf)
		_, _ = c.gz.Write(src) // writes to a bytes.Buffer cannot fail
		_ = c.gz.Close()
		return append(dst, c.gzbuf.Bytes()...)
	}
	return append(dst, src...)
}

// grow makes room for n more bytes after len(b).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), 2*cap(b)+n)
	copy(nb, b)
	return nb
}

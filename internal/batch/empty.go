package batch

import (
	"bytes"
	"strings"
	"sync"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// EmptyObject returns the bytes of an object with no records in the format
// and compression its extension names ("jsonl", "json.gz", "bin.zst",
// "parquet", ...): what readers take for an empty file. A key that must be
// fenced off so that nothing else is ever written there gets these bytes;
// false for an extension this package does not write.
func EmptyObject(ext string) ([]byte, bool) {
	base, z, _ := strings.Cut(ext, ".")
	var plain []byte
	switch formatOfExt(base) {
	case FormatJSONLines, FormatRaw:
		plain = []byte{}
	case FormatJSONArray:
		plain = []byte("[]")
	case FormatParquet:
		if z != "" {
			return nil, false // a Parquet object is never compressed as a whole
		}
		b, err := emptyParquet()
		return b, err == nil
	default:
		return nil, false
	}
	c := CompressionNone
	switch z {
	case "":
	case CompressionGzip.Ext():
		c = CompressionGzip
	case CompressionZstd.Ext():
		c = CompressionZstd
	default:
		return nil, false
	}
	out, err := Compress(nil, plain, c)
	return out, err == nil
}

// emptyParquet is a valid Parquet file with no row: the metadata columns
// and nothing else, so that a table over the objects reads it as no rows.
var emptyParquet = sync.OnceValues(func() ([]byte, error) {
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, IncludeMetadata: true})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc.Reset(parquet.Source{})
	if err := enc.Begin(&out); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
})

// ParseExt reads an object extension as ObjectExt writes it ("jsonl.gz",
// "parquet"): its format and compression; false for any other.
func ParseExt(ext string) (Format, Compression, bool) {
	base, z, _ := strings.Cut(ext, ".")
	f := formatOfExt(base)
	if f == "" {
		return "", "", false
	}
	for _, c := range []Compression{CompressionNone, CompressionGzip, CompressionZstd} {
		if c.Ext() == z && (f != FormatParquet || c == CompressionNone) {
			return f, c, true
		}
	}
	return "", "", false
}

func formatOfExt(ext string) Format {
	for _, f := range []Format{FormatJSONLines, FormatJSONArray, FormatRaw, FormatParquet} {
		if f.Ext() == ext {
			return f
		}
	}
	return ""
}

package batch

import "strings"

// EmptyObject returns the bytes of an object with no records in the format
// and compression its extension names ("jsonl", "json.gz", "bin.zst", ...):
// what readers take for an empty file. A key that must be fenced off so that
// nothing else is ever written there gets these bytes; false for an
// extension this package does not write.
func EmptyObject(ext string) ([]byte, bool) {
	base, z, _ := strings.Cut(ext, ".")
	var plain []byte
	switch formatOfExt(base) {
	case FormatJSONLines, FormatRaw:
		plain = []byte{}
	case FormatJSONArray:
		plain = []byte("[]")
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

func formatOfExt(ext string) Format {
	for _, f := range []Format{FormatJSONLines, FormatJSONArray, FormatRaw} {
		if f.Ext() == ext {
			return f
		}
	}
	return ""
}

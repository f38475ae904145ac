package archive

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// FuzzDecode: an object of any bytes is records or an error, never a panic.
func FuzzDecode(f *testing.F) {
	layouts := []Layout{
		{Format: batch.FormatJSONLines, Schema: batch.SchemaJSON, Metadata: true, Headers: true},
		{Format: batch.FormatJSONArray, Schema: batch.SchemaRaw},
		{Format: batch.FormatRaw, Schema: batch.SchemaJSON},
		{Format: batch.FormatParquet, Schema: batch.SchemaJSON, Metadata: true, Headers: true},
		{Format: batch.FormatJSONLines, Compression: batch.CompressionZstd, Schema: batch.SchemaText},
		{Format: batch.FormatJSONLines, Compression: batch.CompressionGzip, Schema: batch.SchemaJSON},
	}
	for i, l := range layouts {
		msgs := messages(newRand(uint64(i)), l.Schema, 3)
		f.Add(encode(f, l, msgs), uint8(i))
	}
	f.Add([]byte(`{"headers":{"a":{}},"payload":1}`), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		l := layouts[int(which)%len(layouts)]
		recs, err := Decode(body, l, 3)
		if err != nil && recs != nil {
			t.Fatalf("records with an error: %v", err)
		}
		if recs, err := DecodeErrors(body); err != nil && recs != nil {
			t.Fatalf("error records with an error: %v", err)
		}
	})
}

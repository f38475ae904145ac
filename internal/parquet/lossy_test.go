package parquet_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// TestTextPayloadMatchesJSONFormats: a text payload with ill-formed UTF-8
// reads the same in Parquet as in the JSON formats (the replacement rule is
// kept in both packages, so this guards against drift).
func TestTextPayloadMatchesJSONFormats(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{'a', 0x80, 0xBF, 0xC2, 0xE0, 0xA0, 0xED, 0x9F, 0xF0, 0x90, 0xF4, 0x8F, 0xFF, 0xE2, 0x82, 0xAC}
	for range 2000 {
		p := make([]byte, r.IntN(12))
		for i := range p {
			p[i] = alphabet[r.IntN(len(alphabet))]
		}
		var want string
		if err := json.Unmarshal(jsonscan.AppendString(nil, p), &want); err != nil {
			t.Fatal(err)
		}
		if got := string(parquet.AppendLossyForTest(nil, p)); got != want {
			t.Fatalf("%q: parquet %q, JSON formats %q", p, got, want)
		}
	}
}

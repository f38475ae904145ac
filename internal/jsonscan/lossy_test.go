package jsonscan_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// TestAppendLossyMatchesAppendString: AppendLossy (Parquet's text payloads
// and header keys) replaces ill-formed UTF-8 exactly as the escaping path
// of the JSON formats does, so a text payload reads the same in every format.
func TestAppendLossyMatchesAppendString(t *testing.T) {
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
		if got := string(jsonscan.AppendLossy(nil, p)); got != want {
			t.Fatalf("%q: AppendLossy %q, AppendString %q", p, got, want)
		}
	}
}

package batch

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// TestCompactRandomMutations mutates realistic documents at random places
// with the bytes the Scanner treats specially and checks every result
// against encoding/json, covering the word-at-a-time string paths.
func TestCompactRandomMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	docs := append(benchLines(1024)[:4], indented(benchLines(1024)[:2])...)
	interesting := []byte("\"\\ \n\t\x01\x7f\xff\xc3\xa9{}[],:a0-.eu")
	var sc jsonscan.Scanner
	valid := 0
	for range 20000 {
		src := append([]byte(nil), docs[r.IntN(len(docs))]...)
		for range 1 + r.IntN(3) {
			pos := r.IntN(len(src))
			switch r.IntN(3) {
			case 0:
				src[pos] = interesting[r.IntN(len(interesting))]
			case 1:
				src = append(src[:pos], src[pos+1:]...)
			default:
				src = append(src[:pos], append([]byte{interesting[r.IntN(len(interesting))]}, src[pos:]...)...)
			}
		}
		got, ok, _ := sc.AppendCompact(nil, src)
		if want := isJSON(src); ok != want {
			t.Fatalf("valid = %v, want %v for %q", ok, want, src)
		}
		if ok {
			valid++
			var want bytes.Buffer
			if err := json.Compact(&want, src); err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("compaction differs from json.Compact for %q", src)
			}
		}
	}
	if valid < 2000 || valid > 18000 {
		t.Errorf("%d of 20000 mutants valid: the mix no longer exercises both outcomes", valid)
	}
}

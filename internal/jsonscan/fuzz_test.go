package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// isJSON is what the scanner accepts by default: JSON (encoding/json), UTF-8,
// and nested at most 128 levels deep.
func isJSON(b []byte) bool { return json.Valid(b) && utf8.Valid(b) && nesting(b) <= 128 }

// nesting is the deepest bracket nesting of b outside strings.
func nesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func FuzzCompact(f *testing.F) {
	for _, c := range compactCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"ts":"2026-11-30T20:00:00Z","level":"INFO","msg":"request served","ctx":{"path":"/api/items/7","status":200,"ms":1.25},"tags":["a","b"]}`))
	var sc Scanner
	f.Fuzz(func(t *testing.T, src []byte) {
		got, ok, _ := sc.AppendCompact(nil, src)
		if want := isJSON(src); ok != want {
			t.Fatalf("valid = %v, json.Valid && utf8.Valid = %v for %q", ok, want, src)
		}
		if !ok {
			if len(got) != 0 {
				t.Fatalf("invalid input produced output %q", got)
			}
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, src); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("compacted %q to %q, json.Compact gives %q", src, got, want.Bytes())
		}
	})
}

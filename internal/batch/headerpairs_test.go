package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// TestHeaderPairsMatchJSON checks the text pairs against the JSON formats'
// headers object: same keys in the same order, each value the JSON value
// without its quotes.
func TestHeaderPairsMatchJSON(t *testing.T) {
	raw := wireHeaders(
		strHdr("u8", "overwritten"),
		strHdr("dup", "first"),
		hdr{kindString, []byte("b"), kindBool, []byte{1}},
		hdr{kindString, []byte("i64"), kindInt64, le64(negU64(9_000_000_000))},
		hdr{kindString, []byte("i128"), kindInt128, bytes.Repeat([]byte{0xFF}, 16)},
		hdr{kindString, []byte("u128"), kindUint128, append(le64(0), le64(1)...)},
		hdr{kindString, []byte("f64"), kindDouble, le64(math.Float64bits(0.1))},
		hdr{kindString, []byte("f64int"), kindDouble, le64(math.Float64bits(100))},
		hdr{kindString, []byte("f64nan"), kindDouble, le64(math.Float64bits(math.NaN()))},
		hdr{kindString, []byte("raw"), kindRaw, []byte{0, 1, 2, 0xFF}},
		hdr{kindInt32, le32(7), kindString, []byte("seven")},
		strHdr("q\"", "a\nb\x01/<>é\xff"),
		strHdr("dup", "second"),
		hdr{kindString, []byte("u8"), kindUint8, []byte{255}},
	)
	var p HeaderPairs
	pairs, err := p.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	var hs headerSet
	if err := hs.parse(raw); err != nil {
		t.Fatal(err)
	}
	obj := hs.appendObject(nil)
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	dec.Token()
	i := 0
	for ; dec.More(); i++ {
		k, _ := dec.Token()
		v, _ := dec.Token()
		if i >= len(pairs) {
			t.Fatalf("JSON has more headers than the %d pairs: %s", len(pairs), obj)
		}
		want := ""
		switch v := v.(type) {
		case string:
			want = v
		case json.Number:
			want = v.String()
		case bool:
			want = map[bool]string{true: "true", false: "false"}[v]
		}
		if string(pairs[i].Key) != k.(string) || string(pairs[i].Value) != want {
			t.Errorf("pair %d: %q=%q, JSON has %q=%q", i, pairs[i].Key, pairs[i].Value, k, want)
		}
	}
	if i != len(pairs) {
		t.Errorf("%d pairs, JSON has %d headers: %s", len(pairs), i, obj)
	}
	if _, err := p.Decode([]byte{kindString, 1}); !errors.Is(err, ErrMalformedHeaders) {
		t.Errorf("truncated headers: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { p.Decode(raw) }); n != 0 {
		t.Errorf("Decode allocates %v times once warm", n)
	}
}

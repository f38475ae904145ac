package batch

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// compactCases are checked against encoding/json; the UTF-8 cases mark where
// we are stricter than json.Valid (RFC 8259 §8.1 requires UTF-8).
var compactCases = []string{
	`{}`, `[]`, `0`, `-0`, `1.5e+10`, `-12.0E-3`, `true`, `false`, `null`, `""`,
	` { "a" : [ 1 , { "b" : "c d" } , [ ] ] , "e" : { } } `,
	"\t\r\n[\n1,\n2\n]\n",
	`"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"`,
	`"é 😀 中文"`,
	`{"a":"}","b":"]","c":"\"{"}`,
	`"` + strings.Repeat("abcdefgh", 9) + `\n` + strings.Repeat("z", 17) + `"`,
	// invalid
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`,
	`tru`, `nul`, `falsey`, `"abc`, `"\x"`, `"\u12g4"`, `"\u123"`, "\"a\x01b\"", "\"tab\there\"", `NaN`, `Infinity`,
	`{"a":1}}`, `[1]]`, `{"a":1} {"b":2}`, `"` + strings.Repeat("x", 40) + `\`, `[` + "\x00" + `]`,
	"\"\xff\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\xef\xbb\xbf{}", // invalid UTF-8, and a BOM
}

func TestCompactAgreesWithEncodingJSON(t *testing.T) {
	var sc scanner
	for _, in := range compactCases {
		src := []byte(in)
		got, ok, at := sc.appendCompact([]byte("prefix"), src)
		wantOK := json.Valid(src) && utf8.Valid(src)
		if ok != wantOK {
			t.Errorf("%q: valid = %v, want %v", in, ok, wantOK)
			continue
		}
		if !ok {
			if string(got) != "prefix" {
				t.Errorf("%q: dst changed on invalid input: %q", in, got)
			}
			if at < 0 || at > len(src) {
				t.Errorf("%q: fault offset %d outside input", in, at)
			}
			continue
		}
		var want bytes.Buffer
		if err := json.Compact(&want, src); err != nil {
			t.Fatal(err)
		}
		if string(got) != "prefix"+want.String() {
			t.Errorf("%q: compacted to %q, want %q", in, got[6:], want.String())
		}
	}
}

func TestCompactDepthLimit(t *testing.T) {
	var sc scanner
	for _, depth := range []int{1, 64, 65, 9999, 10000, 10001} {
		for _, open := range []string{"[", `{"k":`} {
			closer := "]"
			if open != "[" {
				closer = "}"
			}
			src := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth))
			_, ok, _ := sc.appendCompact(nil, src)
			if want := json.Valid(src); ok != want {
				t.Errorf("depth %d of %q: valid = %v, json.Valid = %v", depth, open, ok, want)
			}
		}
	}
	// Mixed nesting exercises the object/array stack across 64-bit words.
	var b strings.Builder
	for i := range 200 {
		if i%3 == 0 {
			b.WriteString(`{"k":`)
		} else {
			b.WriteString("[")
		}
	}
	b.WriteString("0")
	for i := 199; i >= 0; i-- {
		if i%3 == 0 {
			b.WriteString("}")
		} else {
			b.WriteString("]")
		}
	}
	if _, ok, _ := sc.appendCompact(nil, []byte(b.String())); !ok {
		t.Error("mixed nesting of depth 200 rejected")
	}
	bad := strings.Replace(b.String(), "]}", "}}", 1)
	if _, ok, _ := sc.appendCompact(nil, []byte(bad)); ok {
		t.Error("mismatched closer accepted")
	}
}

func TestCompactSingleAppendWhenAlreadyCompact(t *testing.T) {
	var sc scanner
	src := []byte(`{"a":[1,2,{"b":"x y"}]}`)
	dst := make([]byte, 0, 64)
	got, ok, _ := sc.appendCompact(dst, src)
	if !ok || string(got) != string(src) {
		t.Fatalf("got %q, %v", got, ok)
	}
	if allocs := testing.AllocsPerRun(100, func() { sc.appendCompact(dst, src) }); allocs != 0 {
		t.Errorf("appendCompact allocates %.0f times per call into a roomy dst", allocs)
	}
}

func TestLossyUTF8MatchesFromUTF8Lossy(t *testing.T) {
	const r = "\uFFFD"
	// Expected outputs follow the Unicode "maximal subpart" practice that
	// Rust's String::from_utf8_lossy implements.
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"é中😀", "é中😀"},
		{"a\xffb", "a" + r + "b"},
		{"\xe2\x82", r},             // truncated 3-byte sequence: one replacement
		{"\xe2\x82x", r + "x"},      // truncated, then ASCII
		{"\xf0\x80\x80", r + r + r}, // overlong lead: each byte alone
		{"\xed\xa0\x80", r + r + r}, // surrogate: each byte alone
		{"\xf4\x90\x80\x80", r + r + r + r},
		{"\xf0\x9f\x98", r}, // truncated 4-byte sequence
		{"\xc0\xaf", r + r},
		{"\x80\x80", r + r},
	}
	for _, tt := range tests {
		if got := string(appendLossy(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("appendLossy(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// The JSON string form applies the same replacement.
		got := AppendJSONString(nil, []byte(tt.in))
		var s string
		if err := json.Unmarshal(got, &s); err != nil || s != tt.want || !utf8.Valid(got) {
			t.Errorf("AppendJSONString(%q) = %q (%v), want a valid JSON string of %q", tt.in, got, err, tt.want)
		}
	}
}

func TestAppendFloatLikeSerdeJSON(t *testing.T) {
	tests := []struct {
		f       float64
		bitSize int
		want    string
	}{
		{0, 64, "0.0"},
		{1, 64, "1.0"},
		{-2.5, 64, "-2.5"},
		{0.1, 64, "0.1"},
		{100, 64, "100.0"},
		{1e15, 64, "1000000000000000.0"},
		{1e16, 64, "1e16"},
		{1.5e16, 64, "1.5e16"},
		{123456789012345680, 64, "1.2345678901234568e17"},
		{0.0001, 64, "0.0001"},
		{0.00001, 64, "0.00001"},
		{0.000001, 64, "1e-6"},
		{1.5e-7, 64, "1.5e-7"},
		{5e-324, 64, "5e-324"},
		{1.7976931348623157e308, 64, "1.7976931348623157e308"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(3.4028235e38)), 32, "3.4028235e38"},
	}
	for _, tt := range tests {
		got := string(appendFloat(nil, tt.f, tt.bitSize))
		if got != tt.want {
			t.Errorf("appendFloat(%v, %d) = %s, want %s", tt.f, tt.bitSize, got, tt.want)
		}
		var back float64
		err := json.Unmarshal([]byte(got), &back)
		if tt.bitSize == 32 {
			back = float64(float32(back)) // shortest float32 digits round-trip as float32
		}
		if err != nil || back != tt.f {
			t.Errorf("appendFloat(%v) = %s does not round-trip (%v, %v)", tt.f, got, back, err)
		}
	}
}

func TestAppendUint128(t *testing.T) {
	tests := []struct {
		lo, hi uint64
		want   string
	}{
		{0, 0, "0"},
		{12345, 0, "12345"},
		{0, 1, "18446744073709551616"},
		{^uint64(0), ^uint64(0), "340282366920938463463374607431768211455"},
		{1, 1, "18446744073709551617"},
	}
	for _, tt := range tests {
		if got := string(appendUint128(nil, tt.lo, tt.hi)); got != tt.want {
			t.Errorf("appendUint128(%d, %d) = %s, want %s", tt.lo, tt.hi, got, tt.want)
		}
	}
	lo, hi := negate128(1, 0)
	if lo != ^uint64(0) || hi != ^uint64(0) {
		t.Errorf("negate128(1) = %x:%x, want all ones", hi, lo)
	}
}

// TestCompactRandomMutations mutates realistic documents at random places
// with the bytes the scanner treats specially and checks every result
// against encoding/json, covering the word-at-a-time string paths.
func TestCompactRandomMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	docs := append(benchLines(1024)[:4], indented(benchLines(1024)[:2])...)
	interesting := []byte("\"\\ \n\t\x01\x7f\xff\xc3\xa9{}[],:a0-.eu")
	var sc scanner
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
		got, ok, _ := sc.appendCompact(nil, src)
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

package jsonscan

import (
	"bytes"
	"encoding/json"
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
	var sc Scanner
	for _, in := range compactCases {
		src := []byte(in)
		got, ok, at := sc.AppendCompact([]byte("prefix"), src)
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
	// At MaxDepthLimit the scanner agrees with encoding/json.
	sc := Scanner{MaxDepth: MaxDepthLimit}
	for _, depth := range []int{1, 64, 65, 9999, 10000, 10001} {
		for _, open := range []string{"[", `{"k":`} {
			closer := "]"
			if open != "[" {
				closer = "}"
			}
			src := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(closer, depth))
			_, ok, _ := sc.AppendCompact(nil, src)
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
	if _, ok, _ := sc.AppendCompact(nil, []byte(b.String())); !ok {
		t.Error("mixed nesting of depth 200 rejected")
	}
	bad := strings.Replace(b.String(), "]}", "}}", 1)
	if _, ok, _ := sc.AppendCompact(nil, []byte(bad)); ok {
		t.Error("mismatched closer accepted")
	}
}

func TestCompactSingleAppendWhenAlreadyCompact(t *testing.T) {
	var sc Scanner
	src := []byte(`{"a":[1,2,{"b":"x y"}]}`)
	dst := make([]byte, 0, 64)
	got, ok, _ := sc.AppendCompact(dst, src)
	if !ok || string(got) != string(src) {
		t.Fatalf("got %q, %v", got, ok)
	}
	if allocs := testing.AllocsPerRun(100, func() { sc.AppendCompact(dst, src) }); allocs != 0 {
		t.Errorf("AppendCompact allocates %.0f times per call into a roomy dst", allocs)
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
		if got := string(AppendLossy(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("AppendLossy(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// The JSON string form applies the same replacement.
		got := AppendString(nil, []byte(tt.in))
		var s string
		if err := json.Unmarshal(got, &s); err != nil || s != tt.want || !utf8.Valid(got) {
			t.Errorf("AppendString(%q) = %q (%v), want a valid JSON string of %q", tt.in, got, err, tt.want)
		}
	}
}

// TestDefaultDepthReadersHandle (issue 15 item 8): a zero Scanner accepts
// what serde_json (upstream) and Python's json read, at most 128 levels, and
// refuses deeper payloads; MaxDepth sets another limit; neither allocates.
func TestDefaultDepthReadersHandle(t *testing.T) {
	nested := func(depth int) []byte {
		return []byte(strings.Repeat(`{"k":[`, depth/2) + strings.Repeat("[", depth%2) + "1" + strings.Repeat("]", depth%2) + strings.Repeat(`]}`, depth/2))
	}
	for _, tc := range []struct {
		max, depth int
		ok         bool
	}{
		{0, 1, true}, {0, 128, true}, {0, 129, false}, {0, 10000, false},
		{5, 5, true}, {5, 6, false}, {MaxDepthLimit, 10000, true}, {MaxDepthLimit + 5, 10001, false},
	} {
		sc := Scanner{MaxDepth: tc.max}
		src := nested(tc.depth)
		if !json.Valid(src) && tc.depth <= MaxDepthLimit {
			t.Fatalf("test input of depth %d is not JSON", tc.depth)
		}
		out, ok, at := sc.AppendCompact(nil, src)
		if ok != tc.ok {
			t.Errorf("MaxDepth %d, depth %d: valid = %v (stopped at byte %d), want %v", tc.max, tc.depth, ok, at, tc.ok)
		}
		if !ok && len(out) != 0 {
			t.Errorf("MaxDepth %d, depth %d: invalid input produced output", tc.max, tc.depth)
		}
	}
	var sc Scanner
	deep, buf := nested(129), make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(50, func() { buf, _, _ = sc.AppendCompact(buf[:0], deep) }); n != 0 {
		t.Errorf("refusing a deep payload allocates %.0f times", n)
	}
}

// TestCompactValueFaults pins where AppendCompactValue and ScanValue stop,
// and where AppendCompact, which refuses the same inputs, says the input
// stopped being JSON: the same byte but for a \u escape the input cuts
// short (len(src)) and what follows a complete value.
func TestCompactValueFaults(t *testing.T) {
	for _, tc := range []struct {
		in      string
		i       int
		end     int // ^fault when negative
		compact string
		at      int // AppendCompact's offset (-1: it accepts)
	}{
		{`{"a" : [1, 2] }`, 0, 15, `{"a":[1,2]}`, -1},
		{`[1, {"b": "c d"}]tail`, 0, 17, `[1,{"b":"c d"}]`, 17},
		{`x:[ true ,null ]`, 2, 16, `[true,null]`, 0},
		{`"s" "t"`, 0, 3, `"s"`, 4},
		{`-1.5e3,`, 0, 6, `-1.5e3`, 6},
		{`nullx`, 0, 4, `null`, 4},
		{``, 0, ^0, ``, 0},
		{`[1,]`, 0, ^3, ``, 3},
		{`{"a" 1}`, 0, ^5, ``, 5},
		{`{"a":1`, 0, ^6, ``, 6},
		{`{1:2}`, 0, ^1, ``, 1},
		{`[tru]`, 0, ^1, ``, 1},
		{`[01]`, 0, ^2, ``, 2},
		{`["\u12`, 0, ^4, ``, 6},
		{`{"\u1":1}`, 0, ^4, ``, 4},
		{`["\\u12`, 0, ^7, ``, 7},
		{"[\"a\x01\"]", 0, ^3, ``, 3},
	} {
		sc := Scanner{MaxDepth: MaxDepthLimit}
		src := []byte(tc.in)
		out, end := sc.AppendCompactValue([]byte("pre"), src, tc.i)
		if end != tc.end || string(out) != "pre"+tc.compact {
			t.Errorf("AppendCompactValue(%q, %d) = %q, %d; want %q, %d", tc.in, tc.i, out, end, "pre"+tc.compact, tc.end)
		}
		if got := sc.ScanValue(src, tc.i); got != tc.end {
			t.Errorf("ScanValue(%q, %d) = %d, want %d", tc.in, tc.i, got, tc.end)
		}
		if tc.i != 0 {
			continue
		}
		_, ok, at := sc.AppendCompact(nil, src)
		if ok != (tc.at < 0) || ok == false && at != tc.at {
			t.Errorf("AppendCompact(%q) = %v at %d, want at %d", tc.in, ok, at, tc.at)
		}
	}
	// Depth counts from the value, wherever it starts.
	sc := Scanner{MaxDepth: 3}
	if end := sc.ScanValue([]byte(`[[[[[1]]]]]`), 2); end != 9 {
		t.Errorf("depth 3 from byte 2: %d", end)
	}
	if end := sc.ScanValue([]byte(`[[[[[1]]]]]`), 1); end != ^4 {
		t.Errorf("depth 4 from byte 1: %d, want ^4", end)
	}
}

// FuzzCompactValue checks AppendCompactValue and ScanValue against
// encoding/json and against AppendCompact: the value they accept is JSON
// and compacts as json.Compact does; when nothing but whitespace follows it
// AppendCompact accepts the whole input with the same output; when they
// refuse, the input is not JSON and AppendCompact stops at the same byte
// (or, for a \u escape cut short, at the end).
func FuzzCompactValue(f *testing.F) {
	for _, c := range compactCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`[1,2] [3]`))
	f.Add([]byte(`{"a":"\u12`))
	var sc, whole Scanner
	sc.MaxDepth = MaxDepthLimit
	whole.MaxDepth = MaxDepthLimit
	f.Fuzz(func(t *testing.T, src []byte) {
		i := SkipSpace(src, 0)
		out, end := sc.AppendCompactValue([]byte("pre"), src, i)
		if got := sc.ScanValue(src, i); got != end {
			t.Fatalf("%q: ScanValue = %d, AppendCompactValue = %d", src, got, end)
		}
		all, ok, at := whole.AppendCompact(nil, src)
		if end < 0 {
			if string(out) != "pre" {
				t.Fatalf("%q: refused, but dst changed to %q", src, out)
			}
			if json.Valid(src) && utf8.Valid(src) {
				t.Fatalf("%q: refused JSON", src)
			}
			want := ^end
			if cutEscape(src, want) {
				want = len(src)
			}
			if ok || at != want {
				t.Fatalf("%q: fault %d, AppendCompact = %v at %d", src, ^end, ok, at)
			}
			return
		}
		v := src[i:end]
		if !json.Valid(v) || !utf8.Valid(v) {
			t.Fatalf("%q: accepted %q, which is not JSON", src, v)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, v); err != nil {
			t.Fatal(err)
		}
		if string(out) != "pre"+want.String() {
			t.Fatalf("%q: compacted to %q, json.Compact gives %q", src, out[3:], want.Bytes())
		}
		if SkipSpace(src, end) == len(src) && (!ok || string(all) != want.String()) {
			t.Fatalf("%q: AppendCompact = %q, %v", src, all, ok)
		}
	})
}

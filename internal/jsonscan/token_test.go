package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// isJSONString is what ScanString accepts: a JSON string (encoding/json)
// that is also UTF-8.
func isJSONString(b []byte) bool {
	return len(b) >= 2 && b[0] == '"' && json.Valid(b) && utf8.Valid(b)
}

func TestScanString(t *testing.T) {
	long := strings.Repeat("abcdefgh", 5)
	for _, tc := range []struct {
		in  string
		end int // ^fault when negative
		esc bool
	}{
		{`""`, 2, false},
		{`"a"`, 3, false},
		{`"abc"def`, 5, false},
		{`"` + long + `"`, 42, false},
		{`"é 中 😀"`, len(`"é 中 😀"`), false},
		{`"a\"b"`, 6, true},
		{`"` + long + `\n"`, 44, true},
		{`"\u00e9\ud83d\ude00"`, 20, true},
		{`"\ud800"`, 8, true}, // a lone surrogate escape is JSON
		{`"\/\b\f\n\r\t\\"`, 16, true},
		// invalid
		{`"`, ^1, false},
		{`"abc`, ^4, false},
		{`"` + long, ^41, false},
		{`"\`, ^2, false},
		{`"\x"`, ^2, false},
		{`"\u12g4"`, ^3, false},
		{`"\u12`, ^3, false}, // cut short: the fault is after "\u" (AppendCompact says len)
		{`"\u`, ^3, false},
		{`"\\u12`, ^6, false}, // an escaped backslash, then text
		{"\"a\x01b\"", ^2, false},
		{"\"\tb\"", ^1, false},
		{"\"\x7f\"", 3, false}, // DEL is not a control byte to JSON
		{"\"\xff\"", ^1, false},
		{"\"ab\xc3\"", ^3, false},
		{"\"\xed\xa0\x80\"", ^1, false}, // a surrogate in UTF-8 is not UTF-8
		{"\"\xef\xbb\xbf\"", 5, false},
	} {
		end, esc := ScanString([]byte(tc.in), 0)
		if end != tc.end || esc != tc.esc {
			t.Errorf("ScanString(%q) = %d, %v; want %d, %v", tc.in, end, esc, tc.end, tc.esc)
		}
	}
	// The scan starts at i and may end anywhere in src.
	src := []byte(`{"key":"value","k2":"x` + "\t" + `y"}`)
	if end, esc := ScanString(src, 7); end != 14 || esc {
		t.Errorf("ScanString at 7 = %d, %v", end, esc)
	}
	if end, _ := ScanString(src, 20); end != ^22 {
		t.Errorf("ScanString at 20 = %d, want the tab's fault", end)
	}
}

// FuzzScanString checks ScanString against encoding/json: it accepts
// exactly the string literals json.Valid accepts in UTF-8, ends at the
// literal's end, reports escapes, and AppendUnquote gives the text
// json.Unmarshal gives.
func FuzzScanString(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b"x`, `"\u00e9\ud83d\ude00"`, `"\ud800\u0041"`, `"\udc00"`, `"\u12`, `"abc`, "\"\xff\"", `"é中"`, `"\\u"`, `"a\/b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		src := append([]byte{'"'}, body...)
		end, esc := ScanString(src, 0)
		if end < 0 {
			if at := ^end; at < 1 || at > len(src) {
				t.Fatalf("%q: fault %d outside the input", src, at)
			}
			for k := 2; k <= len(src); k++ {
				if isJSONString(src[:k]) {
					t.Fatalf("%q: refused, but %q is a JSON string", src, src[:k])
				}
			}
			return
		}
		lit := src[:end]
		if !isJSONString(lit) {
			t.Fatalf("%q: accepted %q, which encoding/json refuses or is not UTF-8", src, lit)
		}
		if esc != (bytes.IndexByte(lit, '\\') >= 0) {
			t.Fatalf("%q: esc = %v", lit, esc)
		}
		var want string
		if err := json.Unmarshal(lit, &want); err != nil {
			t.Fatal(err)
		}
		if got := AppendUnquote([]byte("x"), lit); string(got) != "x"+want {
			t.Fatalf("AppendUnquote(%q) = %q, encoding/json says %q", lit, got[1:], want)
		}
		if !esc && string(lit[1:len(lit)-1]) != want {
			t.Fatalf("%q: no escape, but its text is %q", lit, want)
		}
	})
}

// FuzzAppendUnquote: AppendUnquote never panics on any literal, and
// decodes every literal encoding/json accepts (ill-formed UTF-8 included)
// as json.Unmarshal does.
func FuzzAppendUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"" `, `"\ud83d\ude00"`, `"\ud83d\u0041"`, "\"a\xffb\xe2\x82\"", `"\x"`, `"\u12"`, `"\"`, `"\udc00\ud800"`, `"\uD83D\uDE00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lit []byte) {
		if len(lit) < 2 {
			return
		}
		got := AppendUnquote(nil, lit)
		if lit[0] != '"' || lit[len(lit)-1] != '"' || !json.Valid(lit) {
			return // not exactly one string literal
		}
		var want string
		if err := json.Unmarshal(lit, &want); err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("AppendUnquote(%q) = %q, encoding/json says %q", lit, got, want)
		}
	})
}

func TestAppendUnquoteLenient(t *testing.T) {
	const r = "\uFFFD"
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"\x41"`, r + "41"},
		{`"\u12"`, r + "12"},
		{`"a\"`, "a"}, // a backslash before the closing quote is dropped
		{"\"\\\xc3\xa9\"", r + r},
		{"\"\x01\"", "\x01"},
		{`"\ud83dx"`, r + "x"},
		{`"\ud83d\u12"`, r + r + "12"},
	} {
		if got := string(AppendUnquote(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("AppendUnquote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScanNumber(t *testing.T) {
	for _, tc := range []struct {
		in    string
		end   int
		isInt bool
	}{
		{`0`, 1, true}, {`-0`, 2, true}, {`123`, 3, true}, {`-123,`, 4, true},
		{`01`, 1, true}, {`1-`, 1, true}, {`1.5`, 3, false}, {`1e5`, 3, false},
		{`-1.5E+10]`, 8, false}, {`1.0e-0`, 6, false}, {`99999999999999999999`, 20, true},
		// invalid
		{`-`, ^1, false}, {`-a`, ^1, false}, {`1.`, ^2, false}, {`1.e5`, ^2, false},
		{`1e`, ^2, false}, {`1e+`, ^3, false}, {`1E-x`, ^3, false}, {`-.5`, ^1, false},
	} {
		end, isInt := ScanNumber([]byte(tc.in), 0)
		if end != tc.end || isInt != tc.isInt {
			t.Errorf("ScanNumber(%q) = %d, %v; want %d, %v", tc.in, end, isInt, tc.end, tc.isInt)
		}
	}
}

// FuzzScanNumber checks ScanNumber against encoding/json: it ends at the
// longest prefix json.Valid takes for a number, unless what follows that
// prefix starts a fraction or an exponent it could still take (a '.' after
// an integer, an 'e' or 'E' before any exponent), which lacks its digits:
// there it faults.
func FuzzScanNumber(f *testing.F) {
	for _, s := range []string{`0`, `-0.5e+7x`, `01`, `1.`, `-`, `1e`, `12345678901234567890`, `3.25`, `-0E-0`, `-0.0.0`, `1e5e`, `1.5e`, `1e5.`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) == 0 || src[0] != '-' && (src[0] < '0' || src[0] > '9') {
			return
		}
		end, isInt := ScanNumber(src, 0)
		k := 0 // the longest number prefix
		for j := 1; j <= len(src); j++ {
			if json.Valid(src[:j]) && src[j-1] > ' ' {
				k = j
			}
		}
		want := k
		if k < len(src) {
			num := src[:k]
			switch src[k] {
			case '.':
				if bytes.IndexAny(num, ".eE") < 0 {
					want = -1
				}
			case 'e', 'E':
				if bytes.IndexAny(num, "eE") < 0 {
					want = -1
				}
			}
		}
		if k == 0 {
			want = -1
		}
		if want < 0 {
			if end >= 0 {
				t.Fatalf("ScanNumber(%q) = %d, want a fault", src, end)
			}
			if at := ^end; at < 1 || at > len(src) {
				t.Fatalf("ScanNumber(%q): fault %d outside the input", src, at)
			}
			return
		}
		if end != want {
			t.Fatalf("ScanNumber(%q) = %d, want %d", src, end, want)
		}
		if wantInt := bytes.IndexAny(src[:end], ".eE") < 0; isInt != wantInt {
			t.Fatalf("ScanNumber(%q): isInt = %v", src, isInt)
		}
	})
}

func TestScanLiteral(t *testing.T) {
	for _, tc := range []struct {
		in, lit string
		want    int
	}{
		{`true`, "true", 4}, {`false,`, "false", 5}, {`nullx`, "null", 4},
		{`tru`, "true", ^0}, {`nul`, "null", ^0}, {`fals`, "false", ^0}, {`trUe`, "true", ^0},
	} {
		if got := ScanLiteral([]byte(tc.in), 0, tc.lit); got != tc.want {
			t.Errorf("ScanLiteral(%q, %q) = %d, want %d", tc.in, tc.lit, got, tc.want)
		}
	}
	if got := ScanLiteral([]byte(`[1,null]`), 3, "null"); got != 7 {
		t.Errorf("ScanLiteral at 3 = %d, want 7", got)
	}
}

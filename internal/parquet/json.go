package parquet

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxJSONDepth matches encoding/json's nesting limit, so that "valid JSON"
// here agrees with the JSON formats' validation.
const maxJSONDepth = 10000

// strPlain marks bytes a JSON string may hold without a closer look.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

var isHex = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = true
	}
	return t
}()

func skipWS(src []byte, i int) int {
	for i < len(src) && isSpace[src[i]] {
		i++
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special flags the bytes of w that are a quote, a backslash, a control
// byte or non-ASCII (the lowest flagged lane is exact).
func special(w uint64) uint64 {
	q := w ^ ('"' * lsb)
	b := w ^ ('\\' * lsb)
	return (w | (w - 0x20*lsb) | (q - lsb) | (b - lsb)) & msb
}

// scanString scans the string whose opening quote is at i and returns the
// index after its closing quote and whether it holds escapes; on invalid
// input (bad escape, control byte, ill-formed UTF-8, no end) it returns
// ^(index of the fault), a negative number.
func scanString(src []byte, i int) (int, bool) {
	n := len(src)
	i++
	esc := false
	for {
		for i+8 <= n {
			if m := special(binary.LittleEndian.Uint64(src[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		for i < n && strPlain[src[i]] {
			i++
		}
		if i >= n {
			return ^n, false
		}
		switch c := src[i]; {
		case c == '"':
			return i + 1, esc
		case c == '\\':
			esc = true
			if i+1 >= n {
				return ^n, false
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n || !isHex[src[i+2]] || !isHex[src[i+3]] || !isHex[src[i+4]] || !isHex[src[i+5]] {
					return ^(i + 2), false
				}
				i += 6
			default:
				return ^(i + 1), false
			}
		case c < 0x20:
			return ^i, false
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				return ^i, false
			}
			i += size
		}
	}
}

// scanNumber scans a JSON number at i; isInt reports no fraction and no
// exponent. It returns ^(index of the fault), a negative number on invalid input.
func scanNumber(src []byte, i int) (end int, isInt bool) {
	n := len(src)
	if src[i] == '-' {
		i++
	}
	if i >= n {
		return ^n, false
	}
	switch c := src[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for i < n && src[i]-'0' <= 9 {
			i++
		}
	default:
		return ^i, false
	}
	isInt = true
	if i < n && src[i] == '.' {
		isInt = false
		i++
		if i >= n || src[i]-'0' > 9 {
			return ^i, false
		}
		for i < n && src[i]-'0' <= 9 {
			i++
		}
	}
	if i < n && (src[i] == 'e' || src[i] == 'E') {
		isInt = false
		i++
		if i < n && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= n || src[i]-'0' > 9 {
			return ^i, false
		}
		for i < n && src[i]-'0' <= 9 {
			i++
		}
	}
	return i, isInt
}

// parseInt64 converts a valid JSON integer literal; ok is false when it
// does not fit an int64.
func parseInt64(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		u = u*10 + uint64(c-'0') // 19 digits never overflow a uint64
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// parseFloat converts a valid JSON number to the nearest double (±Inf
// beyond the double range).
func parseFloat(b []byte, isInt bool) float64 {
	if isInt && len(b) <= 16 {
		if v, ok := parseInt64(b); ok && v < 1<<53 && v > -(1<<53) {
			return float64(v)
		}
	}
	// The string does not outlive the call: no copy needed. A range error
	// still returns the rounded (infinite or zero) value.
	f, _ := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	return f
}

// unescape appends the text of a valid JSON string body s (between its
// quotes) to dst. A \u escape of a lone surrogate becomes U+FFFD, as
// encoding/json decodes it.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(hex4(s[i+2:]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, rune(hex4(s[i+2:]))); r2 != utf8.RuneError {
						dst = utf8.AppendRune(dst, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) uint32 {
	var v uint32
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			v = v<<4 | uint32(c-'0')
		case c >= 'a':
			v = v<<4 | uint32(c-'a'+10)
		default:
			v = v<<4 | uint32(c-'A'+10)
		}
	}
	return v
}

func hasLit(src []byte, i int, lit string) bool {
	return len(src)-i >= len(lit) && string(src[i:i+len(lit)]) == lit
}

// compacter validates one JSON value and, when emit is set, appends it to
// dst without insignificant whitespace (strings and numbers as written).
type compacter struct {
	src  []byte
	dst  []byte
	run  int // start of the source bytes not yet appended
	emit bool
}

// compactValue appends the compact text of the value at i (not whitespace)
// to dst and returns the index after it, or ^(index of the fault), a negative number.
func compactValue(dst, src []byte, i int) ([]byte, int) {
	c := compacter{src: src, dst: dst, run: i, emit: true}
	end := c.value(i, 0)
	if end < 0 {
		return dst, end
	}
	return append(c.dst, src[c.run:end]...), end
}

// skipValue validates the value at i and returns the index after it, or
// ^(index of the fault), a negative number.
func skipValue(src []byte, i int) int {
	c := compacter{src: src}
	return c.value(i, 0)
}

// ws skips whitespace, cutting it out of the output.
func (c *compacter) ws(i int) int {
	j := skipWS(c.src, i)
	if j != i && c.emit {
		c.dst = append(c.dst, c.src[c.run:i]...)
		c.run = j
	}
	return j
}

func (c *compacter) value(i, depth int) int {
	src := c.src
	if i >= len(src) {
		return ^len(src)
	}
	switch ch := src[i]; {
	case ch == '"':
		end, _ := scanString(src, i)
		return end
	case ch == '-' || ch >= '0' && ch <= '9':
		end, _ := scanNumber(src, i)
		return end
	case ch == 't':
		return litEnd(src, i, "true")
	case ch == 'f':
		return litEnd(src, i, "false")
	case ch == 'n':
		return litEnd(src, i, "null")
	case ch == '{' || ch == '[':
		if depth >= maxJSONDepth {
			return ^i
		}
		return c.container(i, depth+1)
	}
	return ^i
}

func litEnd(src []byte, i int, lit string) int {
	if !hasLit(src, i, lit) {
		return ^i
	}
	return i + len(lit)
}

// container scans an object or array whose opening byte is at i.
func (c *compacter) container(i, depth int) int {
	src := c.src
	obj := src[i] == '{'
	closer := byte(']')
	if obj {
		closer = '}'
	}
	i = c.ws(i + 1)
	if i < len(src) && src[i] == closer {
		return i + 1
	}
	for {
		if obj {
			if i >= len(src) || src[i] != '"' {
				return ^i
			}
			end, _ := scanString(src, i)
			if end < 0 {
				return end
			}
			i = c.ws(end)
			if i >= len(src) || src[i] != ':' {
				return ^i
			}
			i = c.ws(i + 1)
		}
		i = c.value(i, depth)
		if i < 0 {
			return i
		}
		i = c.ws(i)
		if i >= len(src) {
			return ^i
		}
		switch src[i] {
		case ',':
			i = c.ws(i + 1)
		case closer:
			return i + 1
		default:
			return ^i
		}
	}
}

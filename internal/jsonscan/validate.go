package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting limit of a zero Scanner: serde_json's, the
// upstream connector's parser, and well within what Python's json and other
// recursive readers handle, so every record the sink writes can be read back.
const DefaultMaxDepth = 128

// MaxDepthLimit is the largest MaxDepth: encoding/json's nesting limit. The
// depth stack is sized for it so that a Scanner never allocates.
const MaxDepthLimit = 10000

const maxDepth = MaxDepthLimit

// strPlain marks the bytes a JSON string may contain without a second look:
// everything except '"', '\\', control characters and non-ASCII bytes (which
// need UTF-8 validation).
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// isSpace marks JSON's four insignificant whitespace bytes.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// isHex marks the digits a \u escape accepts.
var isHex = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = true
	}
	return t
}()

// Scanner validates and compacts JSON text. Its depth stack lives inside the
// struct so that a reused Scanner never allocates.
type Scanner struct {
	// stack holds one bit per open container: 1 = object, 0 = array.
	stack [maxDepth/64 + 1]uint64
	// MaxDepth is the deepest nesting accepted as JSON (1..MaxDepthLimit);
	// 0 means DefaultMaxDepth. Deeper input is invalid.
	MaxDepth int
	// Record asks AppendCompact to note the members of a top-level object
	// in Members (offsets into the compacted output), for a transformer.
	Record  bool
	Members []Member
}

// Member locates one member of a top-level JSON object in the compacted
// payload: the key (a string literal, quotes included) is
// payload[KeyStart:KeyEnd] and its value payload[ValStart:ValEnd].
type Member struct{ KeyStart, KeyEnd, ValStart, ValEnd int }

// AppendCompact validates src as exactly one JSON value (RFC 8259, which
// also means UTF-8 text, and at most MaxDepth levels of nesting) and appends it to dst without insignificant whitespace; strings
// and number texts are copied unchanged. When src has no whitespace outside
// strings the whole value goes out in a single append.
// On invalid input it returns dst unchanged, false, and the byte offset where
// the input stopped being JSON.
func (sc *Scanner) AppendCompact(dst, src []byte) ([]byte, bool, int) {
	orig := len(dst)
	n := len(src)
	i := 0
	run := 0 // start of the bytes not yet appended to dst
	depth := 0
	limit := sc.MaxDepth
	if limit <= 0 {
		limit = DefaultMaxDepth
	}
	limit = min(limit, maxDepth)
	var c byte
	// Member recording: top is set when the value is an object and members
	// are wanted; pos maps a source index to its offset in the output.
	top := false
	var m Member
	pos := func(i int) int { return len(dst) - orig + i - run }
	sc.Members = sc.Members[:0]

	// Whitespace is rare in producer output, so the check costs one compare
	// per token in the common case.
	if i < n && src[i] <= ' ' {
		i = skipSpace(src, i)
		run = i
	}

value:
	if i >= n {
		goto fail
	}
	if top && depth == 1 {
		m.ValStart = pos(i)
	}
	c = src[i]
	switch {
	case c == '"':
		// Most strings are short: settle them from one word, without a call.
		if i+9 <= n {
			if m := special(binary.LittleEndian.Uint64(src[i+1:])); m != 0 {
				if j := i + 1 + bits.TrailingZeros64(m)>>3; src[j] == '"' {
					i = j + 1
					goto afterValue
				}
			}
		}
		i = scanString(src, i+1)
		if i < 0 {
			i = -i
			goto fail
		}
	case c == '{':
		if depth == limit {
			goto fail
		}
		if depth == 0 && sc.Record {
			top = true
		}
		sc.stack[depth>>6] |= 1 << (depth & 63)
		depth++
		i++
		if i < n && src[i] <= ' ' {
			if j := skipSpace(src, i); j != i {
				dst = append(dst, src[run:i]...)
				i, run = j, j
			}
		}
		if i < n && src[i] == '}' {
			i++
			depth--
			goto afterValue
		}
		goto key
	case c == '[':
		if depth == limit {
			goto fail
		}
		sc.stack[depth>>6] &^= 1 << (depth & 63)
		depth++
		i++
		if i < n && src[i] <= ' ' {
			if j := skipSpace(src, i); j != i {
				dst = append(dst, src[run:i]...)
				i, run = j, j
			}
		}
		if i < n && src[i] == ']' {
			i++
			depth--
			goto afterValue
		}
		goto value
	case c == '-' || (c >= '0' && c <= '9'):
		i = scanNumber(src, i)
		if i < 0 {
			i = -i
			goto fail
		}
	case c == 't':
		if n-i < 4 || string(src[i:i+4]) != "true" {
			goto fail
		}
		i += 4
	case c == 'f':
		if n-i < 5 || string(src[i:i+5]) != "false" {
			goto fail
		}
		i += 5
	case c == 'n':
		if n-i < 4 || string(src[i:i+4]) != "null" {
			goto fail
		}
		i += 4
	default:
		goto fail
	}

afterValue:
	if top && depth == 1 {
		m.ValEnd = pos(i)
		sc.Members = append(sc.Members, m)
	}
	if i < n && src[i] <= ' ' {
		if j := skipSpace(src, i); j != i {
			dst = append(dst, src[run:i]...)
			i, run = j, j
		}
	}
	if depth == 0 {
		if i != n {
			goto fail
		}
		dst = append(dst, src[run:]...)
		return dst, true, 0
	}
	if i >= n {
		goto fail
	}
	c = src[i]
	if sc.stack[(depth-1)>>6]&(1<<((depth-1)&63)) != 0 {
		switch c {
		case ',':
			i++
			if i < n && src[i] <= ' ' {
				if j := skipSpace(src, i); j != i {
					dst = append(dst, src[run:i]...)
					i, run = j, j
				}
			}
			goto key
		case '}':
			i++
			depth--
			goto afterValue
		}
		goto fail
	}
	switch c {
	case ',':
		i++
		if i < n && src[i] <= ' ' {
			if j := skipSpace(src, i); j != i {
				dst = append(dst, src[run:i]...)
				i, run = j, j
			}
		}
		goto value
	case ']':
		i++
		depth--
		goto afterValue
	}
	goto fail

key:
	if i >= n || src[i] != '"' {
		goto fail
	}
	if top && depth == 1 {
		m.KeyStart = pos(i)
	}
	if i+9 <= n {
		if m := special(binary.LittleEndian.Uint64(src[i+1:])); m != 0 {
			if j := i + 1 + bits.TrailingZeros64(m)>>3; src[j] == '"' {
				i = j + 1
				goto colon
			}
		}
	}
	i = scanString(src, i+1)
	if i < 0 {
		i = -i
		goto fail
	}
colon:
	if top && depth == 1 {
		m.KeyEnd = pos(i)
	}
	if i < n && src[i] <= ' ' {
		if j := skipSpace(src, i); j != i {
			dst = append(dst, src[run:i]...)
			i, run = j, j
		}
	}
	if i >= n || src[i] != ':' {
		goto fail
	}
	i++
	if i < n && src[i] <= ' ' {
		if j := skipSpace(src, i); j != i {
			dst = append(dst, src[run:i]...)
			i, run = j, j
		}
	}
	goto value

fail:
	return dst[:orig], false, i
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && isSpace[src[i]] {
		i++
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special flags (in the lane's top bit) the bytes of w that are a quote, a
// backslash, a control byte or non-ASCII.
func special(w uint64) uint64 {
	q := w ^ ('"' * lsb)
	b := w ^ ('\\' * lsb)
	return (w | (w - 0x20*lsb) | (q - lsb) | (b - lsb)) & msb
}

// scanString scans a string body starting just after its opening quote and
// returns the index after the closing quote, or -(index of the fault).
func scanString(src []byte, i int) int {
	n := len(src)
	for {
		// Eight bytes at a time: a lane is flagged when it is a quote, a
		// backslash, a control byte or non-ASCII. Borrows only run upward
		// from a flagged lane, so the lowest flagged lane is exact.
		for i+16 <= n {
			m1 := special(binary.LittleEndian.Uint64(src[i:]))
			m2 := special(binary.LittleEndian.Uint64(src[i+8:]))
			if m1|m2 != 0 {
				if m1 != 0 {
					i += bits.TrailingZeros64(m1) >> 3
				} else {
					i += 8 + bits.TrailingZeros64(m2)>>3
				}
				goto slow
			}
			i += 16
		}
		if i+8 <= n {
			if m := special(binary.LittleEndian.Uint64(src[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto slow
			}
			i += 8
		}
	slow:
		for i < n && strPlain[src[i]] {
			i++
		}
		if i >= n {
			return -n
		}
		switch c := src[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= n {
				return -n
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > n {
					return -n
				}
				if !isHex[src[i+2]] || !isHex[src[i+3]] || !isHex[src[i+4]] || !isHex[src[i+5]] {
					return -(i + 2)
				}
				i += 6
			default:
				return -(i + 1)
			}
		case c < 0x20:
			return -i
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				return -i
			}
			i += size
		}
	}
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? from i
// and returns the index after it, or -(index of the fault).
func scanNumber(src []byte, i int) int {
	n := len(src)
	if src[i] == '-' {
		i++
	}
	if i >= n {
		return -n
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
		return -i
	}
	if i < n && src[i] == '.' {
		i++
		if i >= n || src[i]-'0' > 9 {
			return -i
		}
		for i < n && src[i]-'0' <= 9 {
			i++
		}
	}
	if i < n && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < n && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= n || src[i]-'0' > 9 {
			return -i
		}
		for i < n && src[i]-'0' <= 9 {
			i++
		}
	}
	return i
}

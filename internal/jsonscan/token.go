package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The token scanners below validate one JSON token (RFC 8259) that starts
// at src[i] and return the index just past it. On input that is not JSON
// they return ^f, a negative number, where f is the offset of the fault:
// the first byte that cannot continue the token, or len(src) when the
// input ends inside it. They neither allocate nor look past the token.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special flags (in the lane's top bit) the bytes of w that are a quote, a
// backslash, a control byte or non-ASCII. Borrows only run upward from a
// flagged lane, so the lowest flagged lane is exact (higher ones may not be).
func special(w uint64) uint64 {
	q := w ^ ('"' * lsb)
	b := w ^ ('\\' * lsb)
	return (w | (w - 0x20*lsb) | (q - lsb) | (b - lsb)) & msb
}

// ScanString scans the string literal whose opening quote is at src[i]
// (src[i] must be '"'; it is not checked) and returns the index just past
// its closing quote, and esc: whether the literal holds a backslash escape.
// Without one the bytes between the quotes are the string's text; with one,
// AppendUnquote gives the text.
//
// A valid literal is UTF-8 with no control byte (below 0x20) and no
// escapes but \" \\ \/ \b \f \n \r \t and \u followed by four hex digits
// (either case). A \u escape of a lone surrogate is valid, as
// encoding/json has it (its text is U+FFFD).
//
// On invalid input it returns ^f, false, where f is the offset of the
// control byte, of the first byte of ill-formed UTF-8, of the byte after a
// backslash that starts no escape, of the byte just after "\u" when four hex
// digits do not follow it (even when the input ends first), or len(src)
// when the input ends inside the literal otherwise.
func ScanString(src []byte, i int) (end int, esc bool) {
	n := len(src)
	i++
	for {
		// Eight bytes at a time: a lane is flagged when it is a quote, a
		// backslash, a control byte or non-ASCII.
		for i+8 <= n {
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

// ScanNumber scans the number -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// that starts at src[i] (src[i] must be '-' or a digit; it is not checked)
// and returns the index just past it, and isInt: whether it has neither a
// fraction nor an exponent (it may still not fit any integer type).
//
// The scan stops at the first byte that cannot extend the number, which
// the caller judges: "01" scans as "0" and "1-" as "1". A '-', '.', 'e',
// 'E' or exponent sign that no digit follows is a fault: ^f, false, where f
// is the offset of the byte where a digit was due, or len(src).
func ScanNumber(src []byte, i int) (end int, isInt bool) {
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

// ScanLiteral returns i+len(lit) when src[i:] begins with lit (one of the
// literals true, false and null, as the caller has chosen from src[i]), or
// ^i. Like the other scanners it does not look at the byte after the
// literal: "nullx" scans as "null".
func ScanLiteral(src []byte, i int, lit string) int {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return ^i
	}
	return i + len(lit)
}

package jsonscan

import (
	"encoding/base64"
)

const hexDigits = "0123456789abcdef"

// replacementChar is U+FFFD in UTF-8, written for each ill-formed sequence.
const replacementChar = "\uFFFD"

// AppendString appends s as a JSON string escaped the way serde_json
// does it: '"' and '\\' escaped, \b \f \n \r \t for those controls, \u00xx
// (lowercase hex) for the other controls, and nothing else escaped ('/',
// '<', '>', '&', DEL and non-ASCII pass through). Ill-formed UTF-8 is replaced
// by U+FFFD per maximal ill-formed subpart, like Rust's String::from_utf8_lossy.
func AppendString(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped is AppendString without the quotes.
func appendEscaped(dst []byte, s []byte) []byte {
	run := 0
	i := 0
	n := len(s)
	for i < n {
		c := s[i]
		if strPlain[c] {
			i++
			continue
		}
		if c >= 0x80 {
			size, ok := utf8Seq(s[i:])
			if ok {
				i += size
				continue
			}
			dst = append(dst, s[run:i]...)
			dst = append(dst, replacementChar...)
			i += size
			run = i
			continue
		}
		dst = append(dst, s[run:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		run = i
	}
	return append(dst, s[run:]...)
}

// AppendLossy appends s with ill-formed UTF-8 replaced like appendEscaped
// does, but without JSON escaping (for header keys that are sorted by their
// text before they are escaped).
func AppendLossy(dst []byte, s []byte) []byte {
	run := 0
	i := 0
	for i < len(s) {
		if s[i] < 0x80 {
			i++
			continue
		}
		size, ok := utf8Seq(s[i:])
		if !ok {
			dst = append(dst, s[run:i]...)
			dst = append(dst, replacementChar...)
			run = i + size
		}
		i += size
	}
	return append(dst, s[run:]...)
}

// utf8Seq inspects the non-ASCII sequence at the start of s. It returns the
// sequence's length and true when it is well-formed, or the length of its
// maximal ill-formed subpart (at least 1) and false, which is the unit the
// Unicode standard (and from_utf8_lossy) replaces with one U+FFFD.
func utf8Seq(s []byte) (int, bool) {
	b0 := s[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case b0 >= 0xC2 && b0 <= 0xDF:
		need = 1
	case b0 == 0xE0:
		need, lo = 2, 0xA0
	case b0 >= 0xE1 && b0 <= 0xEC, b0 == 0xEE, b0 == 0xEF:
		need = 2
	case b0 == 0xED:
		need, hi = 2, 0x9F
	case b0 == 0xF0:
		need, lo = 3, 0x90
	case b0 >= 0xF1 && b0 <= 0xF3:
		need = 3
	case b0 == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1, false
	}
	for k := 1; k <= need; k++ {
		if k >= len(s) || s[k] < lo || s[k] > hi {
			return k, false
		}
		lo, hi = 0x80, 0xBF
	}
	return need + 1, true
}

// AppendBase64 appends src as a JSON string holding its standard, padded
// base64 encoding.
func AppendBase64(dst, src []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, src)
	return append(dst, '"')
}

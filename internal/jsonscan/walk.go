package jsonscan

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrMalformed is wrapped by the walks below when their input is not the
// compact, validated JSON they expect: it signals a broken caller, not bad
// user data (user data is validated by Scanner first).
var ErrMalformed = errors.New("malformed JSON")

// SkipString returns the index just past the string literal starting at b[i].
func SkipString(b []byte, i int) (int, error) {
	// Strings in payloads are mostly short: a byte loop beats a call to
	// bytes.IndexByte, and skipping each escaped byte makes the closing
	// quote the first unescaped one.
	for j := i + 1; j < len(b); j++ {
		if !stringStop[b[j]] {
			continue
		}
		if b[j] == '"' {
			return j + 1, nil
		}
		j++ // the byte after a backslash is escaped
	}
	return 0, fmt.Errorf("%w: unterminated string at byte %d", ErrMalformed, i)
}

// stringStop marks the bytes that end or escape inside a string.
var stringStop = [256]bool{'"': true, '\\': true}

// structural marks the bytes that delimit nested values and strings.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// SkipValue returns the index just past the JSON value starting at b[i].
// It trusts the caller's validation for literals and numbers and only tracks
// nesting and strings, which is all splitting needs.
func SkipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: missing value", ErrMalformed)
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		j := i
		for j < len(b) {
			c := b[j]
			if !structural[c] {
				j++ // most bytes of a nested value are none of the five that matter
				continue
			}
			switch c {
			case '"':
				// Skip the string in line: a call per short string costs more
				// than the string.
				for j++; j < len(b); j++ {
					if stringStop[b[j]] {
						if b[j] == '"' {
							break
						}
						j++ // the byte after a backslash is escaped
					}
				}
			case '{', '[':
				depth++
			default: // '}', ']'
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
			j++
		}
		return 0, fmt.Errorf("%w: unterminated value at byte %d", ErrMalformed, i)
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j++
		}
		if j == i {
			return 0, fmt.Errorf("%w: unexpected %q at byte %d", ErrMalformed, b[i], i)
		}
		return j, nil
	}
}

// NeedsUnquote reports whether a string literal's bytes differ from its
// text: it has escapes, or non-ASCII bytes that may be invalid UTF-8.
func NeedsUnquote(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// AppendUnquote appends the text of the JSON string literal lit (quotes
// included) to dst: its escapes decoded, a \u escape of a lone surrogate
// (one that is not a high surrogate followed by a \u escape of a low one)
// as U+FFFD, as encoding/json decodes it. lit is meant to be a literal
// ScanString (or a Scanner) accepted. Each byte of ill-formed UTF-8, which
// encoding/json accepts in a string, becomes U+FFFD as encoding/json's
// Unmarshal has it. Any other input decodes without a panic: an escape that
// is not one ("\x"; a "\u" without four hex digits, whose following bytes
// are then read as text) becomes U+FFFD, a backslash just before the
// closing quote is dropped, and anything else is copied.
func AppendUnquote(dst, lit []byte) []byte {
	s := lit[1 : len(lit)-1]
	run := 0 // start of the bytes not yet appended to dst
	for i := 0; i < len(s); {
		c := s[i]
		if unquotePlain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRune(s[i:]); r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			dst = append(dst, s[run:i]...)
			dst = append(dst, replacementChar...)
			i++
			run = i
			continue
		}
		// A backslash.
		dst = append(dst, s[run:i]...)
		i++
		if i >= len(s) {
			run = i
			break
		}
		switch s[i] {
		case '"', '\\', '/':
			dst = append(dst, s[i])
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
			r, ok := hex4(s[i+1:])
			if !ok {
				dst = append(dst, replacementChar...)
				break
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, ok := hex4(s[i+3:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
							i += 6
						}
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, replacementChar...)
		}
		i++ // past the escape's last byte
		run = i
	}
	return append(dst, s[run:]...)
}

// unquotePlain marks the bytes AppendUnquote copies as they are: ASCII but
// the backslash.
var unquotePlain = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = c != '\\'
	}
	return t
}()

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

package transform

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// ErrMalformedPayload is wrapped by Transform's error when a payload that
// starts like an object cannot be split into members. The batch encoder
// validates JSON first, so it signals a broken caller, not bad user data.
var ErrMalformedPayload = errors.New("transform: payload is not a valid JSON object")

// member is one top-level key/value pair of the object being rewritten.
// key and val alias either the payload or values pre-rendered at NewPipeline,
// which is what keeps the common transforms allocation-free.
type member struct {
	key []byte // the key as a JSON string literal, quotes included
	// plain is set when key's bytes are its text (ASCII, no escapes), so
	// comparing it with a configured key is a plain byte comparison.
	plain bool
	val   []byte   // the value as JSON text; nil when comp is set
	comp  computed // a value rendered only on output, from the message
}

// scanObject appends the members of the JSON object obj to ms.
// obj must start with '{'. Whitespace between top-level tokens is tolerated;
// values are kept byte for byte.
func scanObject(ms []member, obj []byte) ([]member, error) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ms, ErrMalformedPayload
	}
	i = skipWS(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return ms, trailing(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return ms, fmt.Errorf("%w: expected a key at byte %d", ErrMalformedPayload, i)
		}
		ke, err := skipString(obj, i)
		if err != nil {
			return ms, err
		}
		key := obj[i:ke]
		i = skipWS(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return ms, fmt.Errorf("%w: expected ':' at byte %d", ErrMalformedPayload, i)
		}
		i = skipWS(obj, i+1)
		ve, err := skipValue(obj, i)
		if err != nil {
			return ms, err
		}
		ms = append(ms, member{key: key, val: obj[i:ve], plain: !needsUnquote(key)})
		i = skipWS(obj, ve)
		if i >= len(obj) {
			return ms, fmt.Errorf("%w: unterminated object", ErrMalformedPayload)
		}
		switch obj[i] {
		case ',':
			i = skipWS(obj, i+1)
		case '}':
			return ms, trailing(obj, i+1)
		default:
			return ms, fmt.Errorf("%w: unexpected %q at byte %d", ErrMalformedPayload, obj[i], i)
		}
	}
}

func trailing(b []byte, i int) error {
	if skipWS(b, i) != len(b) {
		return fmt.Errorf("%w: data after the object at byte %d", ErrMalformedPayload, i)
	}
	return nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string literal starting at b[i].
func skipString(b []byte, i int) (int, error) {
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
	return 0, fmt.Errorf("%w: unterminated string at byte %d", ErrMalformedPayload, i)
}

// stringStop marks the bytes that end or escape inside a string.
var stringStop = [256]bool{'"': true, '\\': true}

// structural marks the bytes that delimit nested values and strings.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// skipValue returns the index just past the JSON value starting at b[i].
// It trusts the caller's validation for literals and numbers and only tracks
// nesting and strings, which is all splitting needs.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("%w: missing value", ErrMalformedPayload)
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
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
		return 0, fmt.Errorf("%w: unterminated value at byte %d", ErrMalformedPayload, i)
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
			return 0, fmt.Errorf("%w: unexpected %q at byte %d", ErrMalformedPayload, b[i], i)
		}
		return j, nil
	}
}

// needsUnquote reports whether a string literal's bytes differ from its
// text: it has escapes, or non-ASCII bytes that may be invalid UTF-8.
func needsUnquote(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// appendUnquote appends the text of the JSON string literal lit (quotes
// included, already validated) to dst. Invalid escapes, lone surrogates and
// invalid UTF-8 become U+FFFD, as encoding/json does.
func appendUnquote(dst, lit []byte) []byte {
	s := lit[1 : len(lit)-1]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size - 1
			continue
		}
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(s) {
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
				dst = utf8.AppendRune(dst, utf8.RuneError)
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2, ok := hex4(s[i+3:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = utf8.AppendRune(dst, utf8.RuneError)
		}
	}
	return dst
}

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

// appendQuote appends s as a JSON string literal the way serde_json writes
// it, exactly as the encoder writes every other string.
func appendQuote(dst []byte, s string) []byte {
	return batch.AppendJSONString(dst, []byte(s))
}

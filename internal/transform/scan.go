package transform

import (
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// ErrMalformedPayload is wrapped by Transform's error when a payload that
// starts like an object cannot be split into members. The batch encoder
// validates JSON first, so it signals a broken caller, not bad user data.
var ErrMalformedPayload = jsonscan.ErrMalformed

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
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ms, ErrMalformedPayload
	}
	i = jsonscan.SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return ms, trailing(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return ms, fmt.Errorf("%w: expected a key at byte %d", ErrMalformedPayload, i)
		}
		ke, err := jsonscan.SkipString(obj, i)
		if err != nil {
			return ms, err
		}
		key := obj[i:ke]
		i = jsonscan.SkipSpace(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return ms, fmt.Errorf("%w: expected ':' at byte %d", ErrMalformedPayload, i)
		}
		i = jsonscan.SkipSpace(obj, i+1)
		ve, err := jsonscan.SkipValue(obj, i)
		if err != nil {
			return ms, err
		}
		ms = append(ms, member{key: key, val: obj[i:ve], plain: !jsonscan.NeedsUnquote(key)})
		i = jsonscan.SkipSpace(obj, ve)
		if i >= len(obj) {
			return ms, fmt.Errorf("%w: unterminated object", ErrMalformedPayload)
		}
		switch obj[i] {
		case ',':
			i = jsonscan.SkipSpace(obj, i+1)
		case '}':
			return ms, trailing(obj, i+1)
		default:
			return ms, fmt.Errorf("%w: unexpected %q at byte %d", ErrMalformedPayload, obj[i], i)
		}
	}
}

func trailing(b []byte, i int) error {
	if jsonscan.SkipSpace(b, i) != len(b) {
		return fmt.Errorf("%w: data after the object at byte %d", ErrMalformedPayload, i)
	}
	return nil
}

// appendQuote appends s as a JSON string literal the way serde_json writes
// it, exactly as the encoder writes every other string.
func appendQuote(dst []byte, s string) []byte {
	return jsonscan.AppendString(dst, []byte(s))
}

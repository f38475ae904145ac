package config

import (
	"fmt"
	"log/slog"
	"strconv"
)

const redacted = "[redacted]"

// Secret holds a credential. Every way of printing, marshalling or logging it
// renders "[redacted]" (or "" when empty) so that a logged Config is safe;
// only Reveal returns the value.
type Secret string

// Reveal returns the secret's value, for handing to a client library.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) mask() string {
	if s == "" {
		return ""
	}
	return redacted
}

// String implements fmt.Stringer.
func (s Secret) String() string { return s.mask() }

// GoString implements fmt.GoStringer (%#v).
func (s Secret) GoString() string { return strconv.Quote(s.mask()) }

// Format implements fmt.Formatter so that no verb (%x, %q, %v ...) reaches the value.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprint(f, strconv.Quote(s.mask()))
	case 'v':
		if f.Flag('#') {
			fmt.Fprint(f, s.GoString())
			return
		}
		fmt.Fprint(f, s.mask())
	default:
		fmt.Fprint(f, s.mask())
	}
}

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.mask())), nil }

// MarshalText implements encoding.TextMarshaler (used by text-based encoders and slog's TextHandler).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.mask()), nil }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.mask()) }

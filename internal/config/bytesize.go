package config

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// ErrBitUnit is wrapped by ParseByteSize when a size uses a lower-case 'b',
// which the upstream connector (byte-unit) reads as bits, not bytes.
var ErrBitUnit = errors.New("lower-case 'b' means bits to the upstream connector")

const byteSizeHint = `write a whole number of bytes ("1048576") or a number with B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "8MiB"`

// ParseByteSize parses a byte size the way the upstream connector's byte-unit
// parser does, minus its bit units: "1000", "8MiB", "10MB", "1.5 GiB", "8M",
// "8Ki". Prefixes K M G T P E are decimal, with 'i' binary; a missing unit or
// "B" means bytes. A lower-case 'b' ("8Mb", "8mib") is refused because
// upstream would read it as bits (an 8x smaller threshold). Fractions of a
// byte round up.
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty byte size; %s", byteSizeHint)
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.TrimLeft(t[i:], " \t")
	switch {
	case num == "" && (strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+")):
		return 0, fmt.Errorf("byte size %q has a sign; sizes are unsigned; %s", s, byteSizeHint)
	case num == "":
		return 0, fmt.Errorf("byte size %q does not start with a number; %s", s, byteSizeHint)
	case strings.Count(num, ".") > 1 || num == ".":
		return 0, fmt.Errorf("byte size %q: bad number %q; %s", s, num, byteSizeHint)
	}
	mult, err := byteUnit(s, num, unit)
	if err != nil {
		return 0, err
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("byte size %q: bad number %q; %s", s, num, byteSizeHint)
	}
	r.Mul(r, new(big.Rat).SetInt(mult))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !r.IsInt() {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() {
		return 0, fmt.Errorf("byte size %q is too large", s)
	}
	return n.Int64(), nil
}

// byteUnit returns the multiplier of a unit such as "", "B", "k", "KB", "MiB".
func byteUnit(s, num, unit string) (*big.Int, error) {
	if unit == "" || unit == "B" {
		return big.NewInt(1), nil
	}
	bits := func(fixed string) error {
		return fmt.Errorf("byte size %q: %w (8 times fewer bytes); write %q for bytes", s, ErrBitUnit, fixed)
	}
	power := strings.IndexByte("KMGTPE", upper(unit[0])) + 1
	if power == 0 {
		if unit == "b" || unit == "bit" || unit == "bits" {
			return nil, bits(num + "B")
		}
		return nil, fmt.Errorf("byte size %q: unknown unit %q; %s", s, unit, byteSizeHint)
	}
	prefix := string(upper(unit[0]))
	rest := unit[1:]
	base := int64(1000)
	if strings.HasPrefix(rest, "i") {
		base = 1024
		prefix += "i"
		rest = rest[1:]
	}
	switch rest {
	case "", "B":
	case "b", "bit", "bits":
		return nil, bits(num + prefix + "B")
	default:
		return nil, fmt.Errorf("byte size %q: unknown unit %q; %s", s, unit, byteSizeHint)
	}
	return new(big.Int).Exp(big.NewInt(base), big.NewInt(int64(power)), nil), nil
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

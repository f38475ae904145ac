package parquet

// replacementChar is U+FFFD in UTF-8.
const replacementChar = "\uFFFD"

// appendLossy appends s with each maximal ill-formed UTF-8 subpart replaced
// by U+FFFD, as Rust's String::from_utf8_lossy does — the same rule as the
// JSON formats' text payloads (internal/batch), so a text payload reads the
// same in every format. It is kept here rather than imported so that this
// package stays a leaf that internal/batch can depend on.
func appendLossy(dst, s []byte) []byte {
	run := 0
	for i := 0; i < len(s); {
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

// utf8Seq returns the length of the well-formed sequence at the start of s
// and true, or the length of its maximal ill-formed subpart and false.
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

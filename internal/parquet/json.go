package parquet

import (
	"strconv"
	"unsafe"
)

// The JSON scanning itself is jsonscan's (ScanString, ScanNumber,
// ScanLiteral, AppendUnquote and a Scanner for whole values); what stays
// here converts a number jsonscan.ScanNumber accepted to a column's value.

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

package batch

import (
	"encoding/json"
	"testing"
)

func TestAppendFloatLikeSerdeJSON(t *testing.T) {
	tests := []struct {
		f       float64
		bitSize int
		want    string
	}{
		{0, 64, "0.0"},
		{1, 64, "1.0"},
		{-2.5, 64, "-2.5"},
		{0.1, 64, "0.1"},
		{100, 64, "100.0"},
		{1e15, 64, "1000000000000000.0"},
		{1e16, 64, "1e16"},
		{1.5e16, 64, "1.5e16"},
		{123456789012345680, 64, "1.2345678901234568e17"},
		{0.0001, 64, "0.0001"},
		{0.00001, 64, "0.00001"},
		{0.000001, 64, "1e-6"},
		{1.5e-7, 64, "1.5e-7"},
		{5e-324, 64, "5e-324"},
		{1.7976931348623157e308, 64, "1.7976931348623157e308"},
		{float64(float32(0.1)), 32, "0.1"},
		{float64(float32(3.4028235e38)), 32, "3.4028235e38"},
	}
	for _, tt := range tests {
		got := string(appendFloat(nil, tt.f, tt.bitSize))
		if got != tt.want {
			t.Errorf("appendFloat(%v, %d) = %s, want %s", tt.f, tt.bitSize, got, tt.want)
		}
		var back float64
		err := json.Unmarshal([]byte(got), &back)
		if tt.bitSize == 32 {
			back = float64(float32(back)) // shortest float32 digits round-trip as float32
		}
		if err != nil || back != tt.f {
			t.Errorf("appendFloat(%v) = %s does not round-trip (%v, %v)", tt.f, got, back, err)
		}
	}
}

func TestAppendUint128(t *testing.T) {
	tests := []struct {
		lo, hi uint64
		want   string
	}{
		{0, 0, "0"},
		{12345, 0, "12345"},
		{0, 1, "18446744073709551616"},
		{^uint64(0), ^uint64(0), "340282366920938463463374607431768211455"},
		{1, 1, "18446744073709551617"},
	}
	for _, tt := range tests {
		if got := string(appendUint128(nil, tt.lo, tt.hi)); got != tt.want {
			t.Errorf("appendUint128(%d, %d) = %s, want %s", tt.lo, tt.hi, got, tt.want)
		}
	}
	lo, hi := negate128(1, 0)
	if lo != ^uint64(0) || hi != ^uint64(0) {
		t.Errorf("negate128(1) = %x:%x, want all ones", hi, lo)
	}
}

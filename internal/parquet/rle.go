package parquet

import "math/bits"

// bitWidth is the number of bits needed to store values up to max.
func bitWidth(max uint64) int { return bits.Len64(max) }

func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendHybrid appends vals in Parquet's RLE/bit-packed hybrid encoding with
// bit width bw (1 to 32): a run of 8 or more equal values becomes an RLE
// run, everything else bit-packed groups of 8 (the last group padded with
// zeros; readers take the value count from the page header). The choice of
// runs depends only on vals, so the bytes are deterministic.
func appendHybrid[T uint8 | uint32](dst []byte, vals []T, bw int) []byte {
	n := len(vals)
	for i := 0; i < n; {
		if r := runLength(vals, i); r >= 8 {
			dst = appendRLERun(dst, uint32(vals[i]), r, bw)
			i += r
			continue
		}
		start := i
		for {
			i += 8
			if i >= n {
				i = n
				break
			}
			if runAtLeast8(vals, i) {
				break
			}
		}
		dst = appendBitPacked(dst, vals[start:i], bw)
	}
	return dst
}

// runLength counts the values equal to vals[i] from i on.
func runLength[T uint8 | uint32](vals []T, i int) int {
	v := vals[i]
	j := i + 1
	for j < len(vals) && vals[j] == v {
		j++
	}
	return j - i
}

// runAtLeast8 reports whether vals[i:i+8] are all equal.
func runAtLeast8[T uint8 | uint32](vals []T, i int) bool {
	if i+8 > len(vals) {
		return false
	}
	v := vals[i]
	for _, x := range vals[i+1 : i+8] {
		if x != v {
			return false
		}
	}
	return true
}

func appendRLERun(dst []byte, v uint32, count, bw int) []byte {
	dst = appendUvarint(dst, uint64(count)<<1)
	for nb := (bw + 7) / 8; nb > 0; nb-- {
		dst = append(dst, byte(v))
		v >>= 8
	}
	return dst
}

// appendBitPacked writes vals as one bit-packed run: LSB first, groups of 8
// values taking bw bytes each.
func appendBitPacked[T uint8 | uint32](dst []byte, vals []T, bw int) []byte {
	groups := (len(vals) + 7) / 8
	dst = appendUvarint(dst, uint64(groups)<<1|1)
	var acc uint64
	nbits := 0
	for k := range groups * 8 {
		var v uint64
		if k < len(vals) {
			v = uint64(vals[k])
		}
		acc |= v << nbits
		nbits += bw
		for nbits >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			nbits -= 8
		}
	}
	return dst
}

// appendLevels appends levels as a v1 data page stores them: a 4-byte
// little-endian length, then the hybrid encoding with the bit width of max.
func appendLevels(dst []byte, levels []uint8, max uint8) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = appendHybrid(dst, levels, bitWidth(uint64(max)))
	n := len(dst) - at - 4
	dst[at], dst[at+1], dst[at+2], dst[at+3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return dst
}

// appendBools bit-packs booleans (one byte each, 0 or 1) as PLAIN does.
func appendBools(dst []byte, vals []byte) []byte {
	for i := 0; i < len(vals); i += 8 {
		var b byte
		for k := 0; k < 8 && i+k < len(vals); k++ {
			b |= vals[i+k] << k
		}
		dst = append(dst, b)
	}
	return dst
}

package batch

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// Iggy user-header kinds (iggy-0.8-protocol.md §3).
const (
	kindRaw     = 1
	kindString  = 2
	kindBool    = 3
	kindInt8    = 4
	kindInt16   = 5
	kindInt32   = 6
	kindInt64   = 7
	kindInt128  = 8
	kindUint8   = 9
	kindUint16  = 10
	kindUint32  = 11
	kindUint64  = 12
	kindUint128 = 13
	kindFloat   = 14
	kindDouble  = 15
)

// ErrMalformedHeaders reports user-header bytes that do not follow Iggy's
// wire layout.
var ErrMalformedHeaders = errors.New("malformed user headers")

// fixedSize is the value length each numeric kind must have; 0 = any length.
var fixedSize = [16]int{
	kindBool: 1, kindInt8: 1, kindInt16: 2, kindInt32: 4, kindInt64: 8, kindInt128: 16,
	kindUint8: 1, kindUint16: 2, kindUint32: 4, kindUint64: 8, kindUint128: 16,
	kindFloat: 4, kindDouble: 8,
}

// header is one parsed user header; key text lives in headerSet.keys.
type header struct {
	keyStart, keyEnd int
	kind             byte
	value            []byte
}

// headerSet parses and renders user headers with reusable buffers.
type headerSet struct {
	list []header
	keys []byte
}

// parse splits wire-form headers into h.list, rendering every key as text
// (a non-String key becomes its value's text). Sizes are checked so that a
// truncated or mis-sized header never renders partially.
func (h *headerSet) parse(raw []byte) error {
	h.list = h.list[:0]
	h.keys = h.keys[:0]
	for i := 0; i < len(raw); {
		keyKind, key, next, err := readField(raw, i)
		if err != nil {
			return err
		}
		valKind, val, next2, err := readField(raw, next)
		if err != nil {
			return err
		}
		start := len(h.keys)
		if keyKind == kindString {
			h.keys = jsonscan.AppendLossy(h.keys, key)
		} else {
			h.keys = appendValueText(h.keys, keyKind, key)
		}
		h.list = append(h.list, header{keyStart: start, keyEnd: len(h.keys), kind: valKind, value: val})
		i = next2
	}
	return nil
}

// readField reads [kind:u8][len:u32 LE][bytes] at i.
func readField(raw []byte, i int) (kind byte, field []byte, next int, err error) {
	if len(raw)-i < 5 {
		return 0, nil, 0, fmt.Errorf("%w: truncated field at byte %d", ErrMalformedHeaders, i)
	}
	kind = raw[i]
	if kind < kindRaw || kind > kindDouble {
		return 0, nil, 0, fmt.Errorf("%w: unknown kind %d at byte %d", ErrMalformedHeaders, kind, i)
	}
	size := binary.LittleEndian.Uint32(raw[i+1:])
	start := i + 5
	if uint64(size) > uint64(len(raw)-start) {
		return 0, nil, 0, fmt.Errorf("%w: length %d at byte %d runs past the end", ErrMalformedHeaders, size, i+1)
	}
	end := start + int(size)
	if want := fixedSize[kind]; want != 0 && int(size) != want {
		return 0, nil, 0, fmt.Errorf("%w: kind %d needs %d bytes, got %d at byte %d", ErrMalformedHeaders, kind, want, size, i+1)
	}
	return kind, raw[start:end], end, nil
}

// appendObject writes the parsed headers as a JSON object sorted by key
// bytes; of duplicate keys the last one wins, as inserting into a BTreeMap
// would leave it.
func (h *headerSet) appendObject(dst []byte) []byte {
	keys := h.keys
	list := h.list
	if !slices.IsSortedFunc(list, h.cmp) {
		slices.SortStableFunc(list, h.cmp)
	}
	dst = append(dst, '{')
	wrote := false
	for i := range list {
		e := &list[i]
		if i+1 < len(list) && bytes.Equal(keys[e.keyStart:e.keyEnd], keys[list[i+1].keyStart:list[i+1].keyEnd]) {
			continue
		}
		if wrote {
			dst = append(dst, ',')
		}
		wrote = true
		dst = jsonscan.AppendString(dst, keys[e.keyStart:e.keyEnd])
		dst = append(dst, ':')
		dst = appendValueJSON(dst, e.kind, e.value)
	}
	return append(dst, '}')
}

func (h *headerSet) cmp(a, b header) int {
	return bytes.Compare(h.keys[a.keyStart:a.keyEnd], h.keys[b.keyStart:b.keyEnd])
}

// appendValueJSON renders a header value as the upstream table says: String
// as a string, Raw as base64, Bool as a bool, 8–64-bit integers and finite
// floats as numbers, and 128-bit integers and non-finite floats as strings.
// The value's size was checked by readField.
func appendValueJSON(dst []byte, kind byte, v []byte) []byte {
	switch kind {
	case kindString:
		return jsonscan.AppendString(dst, v)
	case kindRaw:
		return jsonscan.AppendBase64(dst, v)
	case kindInt128, kindUint128:
		dst = append(dst, '"')
		dst = appendValueText(dst, kind, v)
		return append(dst, '"')
	case kindFloat, kindDouble:
		f := floatOf(kind, v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, '"')
			dst = appendValueText(dst, kind, v)
			return append(dst, '"')
		}
	}
	return appendValueText(dst, kind, v)
}

// appendValueText renders a value as bare text: the JSON number or literal
// for numeric and bool kinds, base64 for Raw, the (lossy) text for String,
// and Rust's NaN / inf / -inf for non-finite floats.
func appendValueText(dst []byte, kind byte, v []byte) []byte {
	switch kind {
	case kindRaw:
		return base64.StdEncoding.AppendEncode(dst, v)
	case kindString:
		return jsonscan.AppendLossy(dst, v)
	case kindBool:
		return strconv.AppendBool(dst, v[0] != 0)
	case kindInt8:
		return strconv.AppendInt(dst, int64(int8(v[0])), 10)
	case kindInt16:
		return strconv.AppendInt(dst, int64(int16(binary.LittleEndian.Uint16(v))), 10)
	case kindInt32:
		return strconv.AppendInt(dst, int64(int32(binary.LittleEndian.Uint32(v))), 10)
	case kindInt64:
		return strconv.AppendInt(dst, int64(binary.LittleEndian.Uint64(v)), 10)
	case kindUint8:
		return strconv.AppendUint(dst, uint64(v[0]), 10)
	case kindUint16:
		return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint16(v)), 10)
	case kindUint32:
		return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(v)), 10)
	case kindUint64:
		return strconv.AppendUint(dst, binary.LittleEndian.Uint64(v), 10)
	case kindInt128:
		lo, hi := binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:])
		if int64(hi) < 0 {
			dst = append(dst, '-')
			lo, hi = negate128(lo, hi)
		}
		return appendUint128(dst, lo, hi)
	case kindUint128:
		return appendUint128(dst, binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:]))
	case kindFloat, kindDouble:
		bitSize := 64
		if kind == kindFloat {
			bitSize = 32
		}
		return appendFloat(dst, floatOf(kind, v), bitSize)
	}
	return dst
}

func floatOf(kind byte, v []byte) float64 {
	if kind == kindFloat {
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(v)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(v))
}

func negate128(lo, hi uint64) (uint64, uint64) {
	lo, borrow := bits.Sub64(0, lo, 0)
	hi, _ = bits.Sub64(0, hi, borrow)
	return lo, hi
}

// appendUint128 writes hi:lo in decimal, 19 digits per 64-bit division.
func appendUint128(dst []byte, lo, hi uint64) []byte {
	const chunk = 10_000_000_000_000_000_000 // 10^19
	if hi == 0 {
		return strconv.AppendUint(dst, lo, 10)
	}
	var parts [3]uint64 // 2^128 < 10^39, so at most three chunks
	k := 0
	for hi != 0 {
		qhi := hi / chunk
		var r uint64
		lo, r = bits.Div64(hi%chunk, lo, chunk)
		hi = qhi
		parts[k] = r
		k++
	}
	dst = strconv.AppendUint(dst, lo, 10)
	for k--; k >= 0; k-- {
		var buf [19]byte
		s := strconv.AppendUint(buf[:0], parts[k], 10)
		for pad := len(s); pad < 19; pad++ {
			dst = append(dst, '0')
		}
		dst = append(dst, s...)
	}
	return dst
}

// appendFloat writes a float the way serde_json (ryu) does: shortest digits
// that round-trip, "1.0" for integral values, plain notation for decimal
// exponents in (-5, 16], else "1e21" / "1.5e-7". bitSize 32 uses float32's
// shortest digits. NaN and infinities are written as Rust prints them.
func appendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bitSize) // [-]d[.ddd]e±XX
	if e[0] == '-' {
		dst = append(dst, '-')
		e = e[1:]
	}
	ePos := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[ePos+1:]))
	var digits [24]byte
	nd := 0
	for _, c := range e[:ePos] {
		if c != '.' {
			digits[nd] = c
			nd++
		}
	}
	d := digits[:nd]
	kk := exp + 1 // value = 0.d × 10^kk
	k := kk - nd  // value = d × 10^k
	switch {
	case k >= 0 && kk <= 16:
		dst = append(dst, d...)
		for ; k > 0; k-- {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	case kk > 0 && kk <= 16:
		dst = append(dst, d[:kk]...)
		dst = append(dst, '.')
		return append(dst, d[kk:]...)
	case kk > -5 && kk <= 0:
		dst = append(dst, '0', '.')
		for z := kk; z < 0; z++ {
			dst = append(dst, '0')
		}
		return append(dst, d...)
	default:
		dst = append(dst, d[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		return strconv.AppendInt(dst, int64(kk-1), 10)
	}
}

// HeaderPair is one user header as text.
type HeaderPair struct{ Key, Value []byte }

// HeaderPairs decodes user headers into text pairs, for formats that store
// them as strings (Parquet's MAP<STRING,STRING>): the keys, their order and
// the choice among duplicates are those of the JSON formats' headers object
// (sorted by key bytes, the last duplicate kept), and each value is its
// JSON rendering without quotes — String as (lossy) text, Raw as base64,
// Bool as true/false, integers in decimal, floats as serde_json writes
// them, NaN and infinities as NaN, inf, -inf. A HeaderPairs reuses its
// buffers; it is not safe for concurrent use.
type HeaderPairs struct {
	hs    headerSet
	text  []byte
	spans []int // value start and end offsets in text, two per kept header
	pairs []HeaderPair
}

// Decode parses wire-form headers. The pairs alias p's buffers until the
// next call. Malformed bytes return an error wrapping ErrMalformedHeaders
// (the JSON formats then write the record without headers).
func (p *HeaderPairs) Decode(raw []byte) ([]HeaderPair, error) {
	if err := p.hs.parse(raw); err != nil {
		return nil, err
	}
	h := &p.hs
	if !slices.IsSortedFunc(h.list, h.cmp) {
		slices.SortStableFunc(h.list, h.cmp)
	}
	p.text, p.spans = p.text[:0], p.spans[:0]
	kept := h.list[:0]
	for i, e := range h.list {
		if i+1 < len(h.list) && bytes.Equal(h.keys[e.keyStart:e.keyEnd], h.keys[h.list[i+1].keyStart:h.list[i+1].keyEnd]) {
			continue // a later duplicate wins
		}
		start := len(p.text)
		p.text = appendValueText(p.text, e.kind, e.value)
		p.spans = append(p.spans, start, len(p.text))
		kept = append(kept, e)
	}
	p.pairs = p.pairs[:0]
	for i, e := range kept {
		p.pairs = append(p.pairs, HeaderPair{Key: h.keys[e.keyStart:e.keyEnd], Value: p.text[p.spans[2*i]:p.spans[2*i+1]]})
	}
	return p.pairs, nil
}

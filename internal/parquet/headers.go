package parquet

import (
	"bytes"
	"slices"
	"unicode/utf8"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// writeHeaders writes the headers map sorted by key, the last of duplicate
// keys kept (the order and choice of the JSON formats' headers object).
func (e *Encoder) writeHeaders(hs []Header) {
	m := e.sch.headers
	key, val := m.children[0].col, m.children[1].col
	if hs == nil {
		key.addNull(0, 0)
		val.addNull(0, 0)
		return
	}
	if len(hs) == 0 {
		key.addNull(1, 0)
		val.addNull(1, 0)
		return
	}
	if !validKeys(hs) {
		hs = e.lossyKeys(hs)
	}
	if !strictlySorted(hs) {
		e.hdrs = append(e.hdrs[:0], hs...)
		slices.SortStableFunc(e.hdrs, func(a, b Header) int { return bytes.Compare(a.Key, b.Key) })
		out := e.hdrs[:0]
		for i, h := range e.hdrs {
			if i+1 < len(e.hdrs) && bytes.Equal(h.Key, e.hdrs[i+1].Key) {
				continue // a later duplicate wins
			}
			out = append(out, h)
		}
		hs = out
	}
	for i, h := range hs {
		rep := uint8(1)
		if i == 0 {
			rep = 0
		}
		key.addBytes(e.valid(h.Key), 2, rep)
		val.addBytes(e.valid(h.Value), 3, rep)
	}
}

func validKeys(hs []Header) bool {
	for _, h := range hs {
		if !utf8.Valid(h.Key) {
			return false
		}
	}
	return true
}

// lossyKeys copies hs with ill-formed UTF-8 in keys replaced, before the
// keys are sorted and deduplicated: two keys that differ only in their
// ill-formed bytes become one.
func (e *Encoder) lossyKeys(hs []Header) []Header {
	e.keys = e.keys[:0]
	for _, h := range hs {
		e.keys = jsonscan.AppendLossy(e.keys, h.Key)
	}
	e.hdrs = e.hdrs[:0]
	end := 0
	for _, h := range hs {
		n := len(jsonscan.AppendLossy(e.text[:0], h.Key))
		e.hdrs = append(e.hdrs, Header{Key: e.keys[end : end+n], Value: h.Value})
		end += n
	}
	e.hdrs2 = append(e.hdrs2[:0], e.hdrs...)
	return e.hdrs2
}

func strictlySorted(hs []Header) bool {
	for i := 1; i < len(hs); i++ {
		if bytes.Compare(hs[i-1].Key, hs[i].Key) >= 0 {
			return false
		}
	}
	return true
}

// valid returns b, or a copy with ill-formed UTF-8 replaced.
func (e *Encoder) valid(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	e.text = jsonscan.AppendLossy(e.text[:0], b)
	return e.text
}

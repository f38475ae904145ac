package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func FuzzParseSchema(f *testing.F) {
	f.Add([]byte(logSchema))
	f.Add([]byte(`{"fields":[{"name":"a","type":{"list":{"list":"json"}}}]}`))
	f.Add([]byte(`{"fields":[{"name":"a","type":{"struct":[{"name":"A","type":"bool","required":true}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchema(data)
		if err != nil {
			if !errors.Is(err, ErrPinnedSchema) {
				t.Fatalf("error without ErrPinnedSchema: %v", err)
			}
			return
		}
		// A schema that parses must build a writable file.
		enc, err := NewEncoder(Options{Payload: PayloadJSON, Schema: s, KeepExtra: true})
		if err != nil {
			return // a field named payload_extra
		}
		var out bytes.Buffer
		enc.Reset(Source{})
		if err := enc.Begin(&out); err != nil {
			t.Fatal(err)
		}
		enc.Write(&Record{Payload: []byte(`{}`)})
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := readFooter(out.Bytes()); err != nil {
			t.Fatalf("footer: %v", err)
		}
	})
}

// FuzzWriter feeds arbitrary payloads (split at 0x1E into records) through
// both passes: it must never panic, reject only with a RecordError, and
// always produce a file whose footer and page headers parse; the same
// input must give the same bytes twice.
func FuzzWriter(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1,2.5],"c":{"d":"x"}}`+"\x1e"+`{"a":"s","b":[],"e":null}`), uint8(0))
	f.Add([]byte(`[1]`+"\x1e"+`"s"`+"\x1e"+`{"":{"A":1,"a":2}}`+"\x1e"+`{"x":`), uint8(3))
	f.Add([]byte(`{"a":{"b":{"c":[[[{"d":true}]]]}}}`+"\x1e"+`{"a":{"b":{"c":[[["x"]]]}}}`), uint8(6))
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := Options{Payload: PayloadJSON, IncludeMetadata: mode&1 != 0, IncludeHeaders: mode&2 != 0,
			Compression: codecs[int(mode>>2)%len(codecs)], PageBytes: 64, RowGroupRows: 3, DictionaryBytes: 32}
		var recs []oracleRecord
		for i, p := range bytes.Split(data, []byte{0x1e}) {
			r := oracleRecord{offset: uint64(i), payload: p}
			if i%2 == 0 {
				r.headers = []Header{{Key: p[:min(len(p), 3)], Value: p}}
			}
			recs = append(recs, r)
		}
		encode := func() []byte {
			enc, err := NewEncoder(opts)
			if err != nil {
				t.Fatal(err)
			}
			file, _ := encodeAll(t, enc, Source{Stream: "s", Topic: "t"}, recs)
			return file
		}
		first := encode()
		if _, err := readFooter(first); err != nil {
			t.Fatalf("footer: %v", err)
		}
		if !bytes.Equal(first, encode()) {
			t.Fatal("two encodings differ")
		}
	})
}

// decodeHybrid is a reference decoder of the RLE/bit-packed hybrid.
func decodeHybrid(b []byte, bw, n int) []uint32 {
	var out []uint32
	for len(out) < n {
		h, k := binary.Uvarint(b)
		b = b[k:]
		if h&1 == 0 {
			var v uint32
			for i := range (bw + 7) / 8 {
				v |= uint32(b[i]) << (8 * i)
			}
			b = b[(bw+7)/8:]
			for range h >> 1 {
				out = append(out, v)
			}
			continue
		}
		count := int(h>>1) * 8
		var acc uint64
		nbits := 0
		for range count {
			for nbits < bw {
				acc |= uint64(b[0]) << nbits
				b = b[1:]
				nbits += 8
			}
			out = append(out, uint32(acc&(1<<bw-1)))
			acc >>= bw
			nbits -= bw
		}
	}
	return out[:n]
}

func FuzzHybrid(f *testing.F) {
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 0, 0}, uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, w uint8) {
		bw := int(w%20) + 1
		vals := make([]uint32, len(raw))
		for i, c := range raw {
			vals[i] = uint32(c) * 2654435761 & (1<<bw - 1)
			if c%3 == 0 && i > 0 {
				vals[i] = vals[i-1]
			}
		}
		got := decodeHybrid(appendHybrid(nil, vals, bw), bw, len(vals))
		for i := range vals {
			if got[i] != vals[i] {
				t.Fatalf("value %d: got %d, want %d", i, got[i], vals[i])
			}
		}
	})
}

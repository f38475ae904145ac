package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// This file is a minimal, independent Parquet footer reader for the tests:
// a generic Thrift compact-protocol decoder, and a walk over every page
// header of every column chunk.

// tval is one decoded Thrift value.
type tval struct {
	typ    byte
	i      int64
	b      []byte
	list   []tval
	fields map[int16]tval
}

type tdecoder struct {
	b   []byte
	pos int
}

var errThrift = errors.New("malformed thrift")

func (d *tdecoder) byte1() (byte, error) {
	if d.pos >= len(d.b) {
		return 0, errThrift
	}
	d.pos++
	return d.b[d.pos-1], nil
}

func (d *tdecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		return 0, errThrift
	}
	d.pos += n
	return v, nil
}

func (d *tdecoder) varint() (int64, error) {
	u, err := d.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (d *tdecoder) value(typ byte, depth int) (tval, error) {
	if depth > 64 {
		return tval{}, errThrift
	}
	v := tval{typ: typ}
	var err error
	switch typ {
	case tcTrue:
		v.i = 1
	case tcFalse:
	case tcByte:
		var c byte
		c, err = d.byte1()
		v.i = int64(int8(c))
	case tcI16, tcI32, tcI64:
		v.i, err = d.varint()
	case tcDouble:
		if d.pos+8 > len(d.b) {
			return v, errThrift
		}
		d.pos += 8
	case tcBinary:
		var n uint64
		if n, err = d.uvarint(); err == nil {
			if n > uint64(len(d.b)-d.pos) {
				return v, errThrift
			}
			v.b = d.b[d.pos : d.pos+int(n)]
			d.pos += int(n)
		}
	case tcList:
		v.list, err = d.list(depth)
	case tcStruct:
		v.fields, err = d.structure(depth)
	default:
		err = fmt.Errorf("%w: type %d", errThrift, typ)
	}
	return v, err
}

func (d *tdecoder) list(depth int) ([]tval, error) {
	h, err := d.byte1()
	if err != nil {
		return nil, err
	}
	n := uint64(h >> 4)
	if n == 15 {
		if n, err = d.uvarint(); err != nil {
			return nil, err
		}
	}
	if n > uint64(len(d.b)) {
		return nil, errThrift
	}
	out := make([]tval, 0, n)
	for range n {
		et := h & 0x0F
		if et == tcTrue || et == tcFalse { // list bools are one byte each
			c, err := d.byte1()
			if err != nil {
				return nil, err
			}
			out = append(out, tval{typ: et, i: int64(c & 1)})
			continue
		}
		v, err := d.value(et, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *tdecoder) structure(depth int) (map[int16]tval, error) {
	fields := map[int16]tval{}
	var last int16
	for {
		h, err := d.byte1()
		if err != nil {
			return nil, err
		}
		if h == 0 {
			return fields, nil
		}
		id := last + int16(h>>4)
		if h>>4 == 0 {
			v, err := d.varint()
			if err != nil {
				return nil, err
			}
			id = int16(v)
		}
		last = id
		v, err := d.value(h&0x0F, depth+1)
		if err != nil {
			return nil, err
		}
		fields[id] = v
	}
}

// footer is what the tests check of a file.
type footer struct {
	meta   map[int16]tval
	schema []map[int16]tval
	groups []map[int16]tval
}

// readFooter parses the footer and walks every page header, checking that
// offsets, sizes and counts agree.
func readFooter(file []byte) (*footer, error) {
	n := len(file)
	if n < 12 || string(file[:4]) != "PAR1" || string(file[n-4:]) != "PAR1" {
		return nil, errors.New("no PAR1 magic at both ends")
	}
	flen := int(binary.LittleEndian.Uint32(file[n-8:]))
	if flen > n-12 {
		return nil, fmt.Errorf("footer length %d past the file", flen)
	}
	d := &tdecoder{b: file[n-8-flen : n-8]}
	meta, err := d.structure(0)
	if err != nil {
		return nil, fmt.Errorf("footer: %w", err)
	}
	if d.pos != flen {
		return nil, fmt.Errorf("footer: %d trailing bytes", flen-d.pos)
	}
	f := &footer{meta: meta}
	for _, e := range meta[2].list {
		f.schema = append(f.schema, e.fields)
	}
	var rows int64
	for _, g := range meta[4].list {
		f.groups = append(f.groups, g.fields)
		rows += g.fields[3].i
		for _, c := range g.fields[1].list {
			if err := checkChunk(file[:n-8-flen], c.fields[3].fields, g.fields[3].i); err != nil {
				return nil, err
			}
		}
	}
	if rows != meta[3].i {
		return nil, fmt.Errorf("row groups hold %d rows, footer says %d", rows, meta[3].i)
	}
	return f, nil
}

// checkChunk walks a column chunk's pages.
func checkChunk(data []byte, cm map[int16]tval, groupRows int64) error {
	start := cm[9].i
	if dict, ok := cm[11]; ok {
		start = dict.i
	}
	end := start + cm[7].i
	if start < 4 || end > int64(len(data)) || start > end {
		return fmt.Errorf("chunk %q: bytes [%d,%d) outside the data", pathOf(cm), start, end)
	}
	var values int64
	for pos := start; pos < end; {
		d := &tdecoder{b: data[pos:end]}
		ph, err := d.structure(0)
		if err != nil {
			return fmt.Errorf("chunk %q: page header at %d: %w", pathOf(cm), pos, err)
		}
		size := int64(ph[3].i)
		pos += int64(d.pos) + size
		switch ph[1].i {
		case int64(pageData):
			values += ph[5].fields[1].i
		case int64(pageDictionary):
		default:
			return fmt.Errorf("chunk %q: page type %d", pathOf(cm), ph[1].i)
		}
		if pos > end {
			return fmt.Errorf("chunk %q: page runs past the chunk", pathOf(cm))
		}
	}
	if values != cm[5].i || values < groupRows {
		return fmt.Errorf("chunk %q: pages hold %d values, metadata %d, rows %d", pathOf(cm), values, cm[5].i, groupRows)
	}
	return nil
}

// athenaProblem returns why a schema element is not a type Athena reads,
// or "" when it is fine.
func athenaProblem(e map[int16]tval) string {
	name := string(e[4].b)
	if _, group := e[1]; !group {
		return ""
	}
	switch t := e[1].i; t {
	case int64(typeInt96), int64(typeFixed):
		return fmt.Sprintf("%s: physical type %d", name, t)
	}
	if c, ok := e[6]; ok {
		switch c.i {
		case 11, 12, 13, 14: // UINT_8..UINT_64
			return name + ": unsigned converted type"
		}
	}
	if lt, ok := e[10]; ok {
		for id, v := range lt.fields {
			switch id {
			case 1, 2, 3: // STRING, MAP, LIST
			case 8: // TIMESTAMP: only MILLIS or MICROS
				if _, nanos := v.fields[2].fields[3]; nanos {
					return name + ": nanosecond timestamp"
				}
			case 10: // INTEGER
				if v.fields[2].i != 1 {
					return name + ": unsigned integer"
				}
			default:
				return fmt.Sprintf("%s: logical type %d", name, id)
			}
		}
	}
	return ""
}

// Physical types Athena does not get from us.
const (
	typeInt96 int32 = 3
	typeFixed int32 = 7
)

func pathOf(cm map[int16]tval) string {
	s := ""
	for i, p := range cm[3].list {
		if i > 0 {
			s += "."
		}
		s += string(p.b)
	}
	return s
}

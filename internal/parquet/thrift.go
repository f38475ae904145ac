package parquet

import "math"

// Thrift compact protocol type codes (thrift's TCompactProtocol spec).
const (
	tcTrue   = 1
	tcFalse  = 2
	tcByte   = 3
	tcI16    = 4
	tcI32    = 5
	tcI64    = 6
	tcDouble = 7
	tcBinary = 8
	tcList   = 9
	tcStruct = 12
)

// thriftWriter appends Thrift compact-protocol structs to buf. It writes only
// what the Parquet footer and page headers need: structs, i32, i64, binary,
// bool fields and lists. Field ids of the enclosing structs are kept on a
// small stack because the protocol encodes each id as a delta from the
// previous one.
type thriftWriter struct {
	buf   []byte
	last  int16   // id of the previous field in the current struct
	stack []int16 // saved last ids of enclosing structs
}

func (t *thriftWriter) reset() {
	t.buf = t.buf[:0]
	t.last = 0
	t.stack = t.stack[:0]
}

func (t *thriftWriter) uvarint(v uint64) {
	for v >= 0x80 {
		t.buf = append(t.buf, byte(v)|0x80)
		v >>= 7
	}
	t.buf = append(t.buf, byte(v))
}

func (t *thriftWriter) varint(v int64) { t.uvarint(uint64(v<<1) ^ uint64(v>>63)) }

// field writes a field header: a one-byte delta form when the id is 1 to 15
// above the previous one, else the type byte and the id as a zigzag varint.
func (t *thriftWriter) field(id int16, typ byte) {
	if d := id - t.last; d > 0 && d <= 15 {
		t.buf = append(t.buf, byte(d)<<4|typ)
	} else {
		t.buf = append(t.buf, typ)
		t.varint(int64(id))
	}
	t.last = id
}

func (t *thriftWriter) i32(id int16, v int32) {
	t.field(id, tcI32)
	t.varint(int64(v))
}

func (t *thriftWriter) i64(id int16, v int64) {
	t.field(id, tcI64)
	t.varint(v)
}

func (t *thriftWriter) binary(id int16, b []byte) {
	t.field(id, tcBinary)
	t.uvarint(uint64(len(b)))
	t.buf = append(t.buf, b...)
}

func (t *thriftWriter) str(id int16, s string) {
	t.field(id, tcBinary)
	t.uvarint(uint64(len(s)))
	t.buf = append(t.buf, s...)
}

func (t *thriftWriter) boolean(id int16, v bool) {
	if v {
		t.field(id, tcTrue)
	} else {
		t.field(id, tcFalse)
	}
}

// beginStruct opens a struct-typed field; endStruct closes it.
func (t *thriftWriter) beginStruct(id int16) {
	t.field(id, tcStruct)
	t.stack = append(t.stack, t.last)
	t.last = 0
}

// beginElem opens a struct that is a list element (no field header).
func (t *thriftWriter) beginElem() {
	t.stack = append(t.stack, t.last)
	t.last = 0
}

func (t *thriftWriter) endStruct() {
	t.buf = append(t.buf, 0) // stop field
	t.last = t.stack[len(t.stack)-1]
	t.stack = t.stack[:len(t.stack)-1]
}

// emptyStruct writes a struct field with no members (Thrift unions of empty
// structs, such as LogicalType STRING, use it).
func (t *thriftWriter) emptyStruct(id int16) {
	t.field(id, tcStruct)
	t.buf = append(t.buf, 0)
}

// list writes a list field header for n elements of type elem.
func (t *thriftWriter) list(id int16, elem byte, n int) {
	t.field(id, tcList)
	if n < 15 {
		t.buf = append(t.buf, byte(n)<<4|elem)
		return
	}
	t.buf = append(t.buf, 0xF0|elem)
	t.uvarint(uint64(n))
}

// stop ends the top-level struct.
func (t *thriftWriter) stop() { t.buf = append(t.buf, 0) }

// clampI32 converts a size for an i32 Thrift field; Parquet page sizes are
// bounded far below 2 GiB by the writer, so clamping never triggers.
func clampI32(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n)
}

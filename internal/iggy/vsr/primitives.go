package vsr

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// decoder reads a body; the first failure sticks, so a decoder reads every
// field and checks once.
type decoder struct {
	b    []byte
	off  int
	what string
	err  error
}

func newDecoder(what string, b []byte) *decoder { return &decoder{b: b, what: what} }

func (d *decoder) need(n int, field string) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.b)-d.off < n {
		d.err = malformed(d.what, "%s needs %d bytes at offset %d, %d left", field, n, d.off, len(d.b)-d.off)
		return false
	}
	return true
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = malformed(d.what, format, args...)
	}
}

func (d *decoder) left() int { return len(d.b) - d.off }

func (d *decoder) u8(field string) uint8 {
	if !d.need(1, field) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) u16(field string) uint16 {
	if !d.need(2, field) {
		return 0
	}
	v := le.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *decoder) u32(field string) uint32 {
	if !d.need(4, field) {
		return 0
	}
	v := le.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64(field string) uint64 {
	if !d.need(8, field) {
		return 0
	}
	v := le.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

func (d *decoder) bytes(n int, field string) []byte {
	if !d.need(n, field) {
		return nil
	}
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}

// name reads [len:u8][UTF-8 1..255].
func (d *decoder) name(field string) string {
	n := int(d.u8(field + " length"))
	v := d.bytes(n, field)
	if d.err != nil {
		return ""
	}
	if n == 0 || !utf8.Valid(v) {
		d.fail("%s: %d bytes that are not a 1..255-byte UTF-8 name", field, n)
		return ""
	}
	return string(v)
}

// longString reads [len:u32][UTF-8].
func (d *decoder) longString(field string) string {
	n := d.u32(field + " length")
	if d.err == nil && uint64(n) > uint64(d.left()) {
		d.fail("%s claims %d bytes, %d left", field, n, d.left())
		return ""
	}
	v := d.bytes(int(n), field)
	if d.err == nil && !utf8.Valid(v) {
		d.fail("%s is not UTF-8", field)
	}
	return string(v)
}

// block reads [len:u32][bytes].
func (d *decoder) block(field string) []byte {
	n := d.u32(field + " length")
	if d.err == nil && uint64(n) > uint64(d.left()) {
		d.fail("%s claims %d bytes, %d left", field, n, d.left())
		return nil
	}
	return d.bytes(int(n), field)
}

// end fails on bytes left over.
func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("%d unexpected bytes after the last field", len(d.b)-d.off)
	}
	return d.err
}

// Identifier names a stream, topic or consumer group: a numeric id or a name.
type Identifier struct {
	Numeric bool
	ID      uint32
	Name    string
}

// NumericID is the identifier of id.
func NumericID(id uint32) Identifier { return Identifier{Numeric: true, ID: id} }

// NamedID is the identifier of a name.
func NamedID(name string) Identifier { return Identifier{Name: name} }

func (i Identifier) String() string {
	if i.Numeric {
		return "#" + strconv.FormatUint(uint64(i.ID), 10)
	}
	return strconv.Quote(i.Name)
}

// Identifier kinds on the wire.
const (
	identNumeric = 1
	identString  = 2
)

// AppendIdentifier appends [kind:u8][len:u8][value]. A name must be
// 1..255 bytes (checked by the caller: see CheckName).
func AppendIdentifier(dst []byte, id Identifier) []byte {
	if id.Numeric {
		dst = append(dst, identNumeric, 4)
		return binary.LittleEndian.AppendUint32(dst, id.ID)
	}
	dst = append(dst, identString, byte(len(id.Name)))
	return append(dst, id.Name...)
}

func (d *decoder) identifier(field string) Identifier {
	kind := d.u8(field + " kind")
	n := int(d.u8(field + " length"))
	v := d.bytes(n, field)
	if d.err != nil {
		return Identifier{}
	}
	switch {
	case kind == identNumeric && n == 4:
		return NumericID(le.Uint32(v))
	case kind == identString && n > 0 && utf8.Valid(v):
		return NamedID(string(v))
	}
	d.fail("%s: kind %d with %d bytes is not an identifier", field, kind, n)
	return Identifier{}
}

// CheckName refuses a name the wire cannot carry (1..255 bytes of UTF-8).
func CheckName(what, s string) error {
	if len(s) == 0 || len(s) > 255 || !utf8.ValidString(s) {
		return fmt.Errorf("%s %q: must be 1..255 bytes of UTF-8", what, s)
	}
	return nil
}

func appendName(dst []byte, s string) []byte {
	dst = append(dst, byte(len(s)))
	return append(dst, s...)
}

func appendLongString(dst []byte, s string) []byte {
	dst = le.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// ConsumerKind says whose offsets a request reads or writes.
type ConsumerKind uint8

// Consumer kinds.
const (
	ConsumerSingle ConsumerKind = 1
	ConsumerGroup  ConsumerKind = 2
)

// Consumer is a consumer or consumer group.
type Consumer struct {
	Kind ConsumerKind
	ID   Identifier
}

func appendConsumer(dst []byte, c Consumer) []byte {
	return AppendIdentifier(append(dst, byte(c.Kind)), c.ID)
}

func (d *decoder) consumer() Consumer {
	k := ConsumerKind(d.u8("consumer kind"))
	id := d.identifier("consumer")
	if d.err == nil && k != ConsumerSingle && k != ConsumerGroup {
		d.fail("consumer kind %d (want 1 consumer or 2 group)", k)
	}
	return Consumer{Kind: k, ID: id}
}

// OptionalPartition is the 5-byte [flag:u8][partition_id:u32].
type OptionalPartition struct {
	Set bool
	ID  uint32
}

// PartitionID is the optional partition id.
func PartitionID(id uint32) OptionalPartition { return OptionalPartition{Set: true, ID: id} }

func appendOptionalPartition(dst []byte, p OptionalPartition) []byte {
	return le.AppendUint32(append(dst, boolByte(p.Set)), p.ID)
}

func (d *decoder) optionalPartition() OptionalPartition {
	flag := d.u8("partition flag")
	id := d.u32("partition id")
	if d.err == nil && flag > 1 {
		d.fail("partition flag %d (want 0 or 1)", flag)
	}
	return OptionalPartition{Set: flag == 1, ID: id}
}

// Header value kinds of user headers and option blocks.
const (
	HeaderRaw    uint8 = 1
	HeaderString uint8 = 2
	headerLast   uint8 = 15
)

// AppendHeader appends one user header (or option) pair:
// [key_kind:u8][len:u32][key][value_kind:u8][len:u32][value].
func AppendHeader(dst []byte, keyKind uint8, key []byte, valueKind uint8, value []byte) []byte {
	dst = append(dst, keyKind)
	dst = le.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = append(dst, valueKind)
	dst = le.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// Option is one key/value of an options block.
type Option struct {
	Key   string
	Kind  uint8
	Value []byte
}

// ParseHeaders checks a user-header (or options) region: pairs of
// [kind:u8][len:u32][data], every length 1..255, kind not 0, the bytes
// consumed exactly. fn, when set, sees each pair.
func ParseHeaders(b []byte, fn func(keyKind uint8, key []byte, valueKind uint8, value []byte) error) error {
	d := newDecoder("user headers", b)
	for d.err == nil && d.left() > 0 {
		kk, key := d.headerField("key")
		vk, val := d.headerField("value")
		if d.err == nil && fn != nil {
			if err := fn(kk, key, vk, val); err != nil {
				return err
			}
		}
	}
	return d.err
}

func (d *decoder) headerField(part string) (uint8, []byte) {
	kind := d.u8(part + " kind")
	n := d.u32(part + " length")
	if d.err != nil {
		return 0, nil
	}
	if kind == 0 || n == 0 || n > 255 {
		d.fail("%s: kind %d, length %d (want kind 1..%d, length 1..255)", part, kind, n, headerLast)
		return 0, nil
	}
	return kind, d.bytes(int(n), part)
}

// ParseOptions reads an options block into pairs with String keys.
func ParseOptions(b []byte) ([]Option, error) {
	var out []Option
	err := ParseHeaders(b, func(kk uint8, key []byte, vk uint8, val []byte) error {
		if kk != HeaderString {
			return malformed("options", "key kind %d, want %d (string)", kk, HeaderString)
		}
		for _, o := range out {
			if o.Key == string(key) {
				return malformed("options", "duplicate key %q", key)
			}
		}
		out = append(out, Option{Key: string(key), Kind: vk, Value: val})
		return nil
	})
	return out, err
}

// AppendOptions appends options as header pairs.
func AppendOptions(dst []byte, opts []Option) []byte {
	for _, o := range opts {
		dst = AppendHeader(dst, HeaderString, []byte(o.Key), o.Kind, o.Value)
	}
	return dst
}

package transform

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"time"
)

// computed names a value derived from the message's metadata.
type computed uint8

const (
	compNone computed = iota
	compDateTime
	compTimestampNanos
	compTimestampMicros
	compTimestampMillis
	compTimestampSeconds
	compUUIDv4
	compUUIDv7
)

// computedNames lists the upstream spellings in the order error messages show them.
var computedNames = []struct {
	name string
	c    computed
}{
	{"date_time", compDateTime},
	{"timestamp_nanos", compTimestampNanos},
	{"timestamp_micros", compTimestampMicros},
	{"timestamp_millis", compTimestampMillis},
	{"timestamp_seconds", compTimestampSeconds},
	{"uuid_v4", compUUIDv4},
	{"uuid_v7", compUUIDv7},
}

func parseComputed(name string) (computed, bool) {
	for _, n := range computedNames {
		if n.name == name {
			return n.c, true
		}
	}
	return compNone, false
}

// msgMeta is what computed values may depend on; nothing else, so that a
// re-rendered object is byte-identical.
type msgMeta struct {
	stream, topic   string
	partition       uint32
	offset          uint64
	timestampMicros uint64
}

// maxRFC3339Seconds is 9999-12-31T23:59:59Z, the last instant RFC 3339's
// four-digit year can express.
const maxRFC3339Seconds = 253402300799

// appendTo appends the JSON text of c for the message m.
func (c computed) appendTo(dst []byte, m *msgMeta) []byte {
	ts := m.timestampMicros
	switch c {
	case compDateTime:
		sec := ts / 1_000_000
		if sec > maxRFC3339Seconds {
			// Same fallback as the record's own timestamp field upstream.
			sec = 0
		}
		return time.Unix(int64(sec), 0).UTC().AppendFormat(dst, `"2006-01-02T15:04:05Z"`)
	case compTimestampNanos:
		// Appending "000" instead of multiplying keeps the value exact even
		// where nanoseconds would overflow uint64.
		dst = strconv.AppendUint(dst, ts, 10)
		if ts == 0 {
			return dst
		}
		return append(dst, '0', '0', '0')
	case compTimestampMicros:
		return strconv.AppendUint(dst, ts, 10)
	case compTimestampMillis:
		return strconv.AppendUint(dst, ts/1_000, 10)
	case compTimestampSeconds:
		return strconv.AppendUint(dst, ts/1_000_000, 10)
	case compUUIDv4:
		u := m.seed("iggy-s3-sink/uuid_v4")
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		return appendUUID(dst, u[:16])
	case compUUIDv7:
		u := m.seed("iggy-s3-sink/uuid_v7")
		var ms [8]byte
		binary.BigEndian.PutUint64(ms[:], ts/1_000)
		copy(u[0:6], ms[2:8])
		u[6] = u[6]&0x0f | 0x70
		u[8] = u[8]&0x3f | 0x80
		return appendUUID(dst, u[:16])
	}
	return append(dst, "null"...)
}

// seed hashes the message's identity. Lengths are written before the names
// so that ("ab","c") and ("a","bc") hash differently.
func (m *msgMeta) seed(tag string) [32]byte {
	var stack [320]byte
	b := append(stack[:0], tag...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.stream)))
	b = append(b, m.stream...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.topic)))
	b = append(b, m.topic...)
	b = binary.BigEndian.AppendUint32(b, m.partition)
	b = binary.BigEndian.AppendUint64(b, m.offset)
	return sha256.Sum256(b)
}

func appendUUID(dst, u []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(dst, '"')
}

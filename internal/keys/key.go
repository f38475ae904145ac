package keys

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

func appendPrefix(dst []byte, prefix string) []byte {
	p := strings.Trim(prefix, "/")
	if p == "" {
		return dst
	}
	dst = append(dst, p...)
	return append(dst, '/')
}

// appendRendered renders the first n segments for pp's partition and
// payload values.
func (t *Template) appendRendered(dst []byte, pp partitionPath, tsMicros uint64, n int) []byte {
	return appendSegments(dst, t.segments[:n], pp, tsMicros)
}

// appendSegments renders segs for pp's partition and payload values.
func appendSegments(dst []byte, segs []segment, pp partitionPath, tsMicros uint64) []byte {
	if tsMicros > math.MaxInt64 {
		tsMicros = math.MaxInt64 // beyond any real clock; keeps time.UnixMicro from wrapping negative
	}
	ts := time.UnixMicro(int64(tsMicros)).UTC()
	for _, s := range segs {
		switch s.kind {
		case literal:
			dst = append(dst, s.text...)
		case phStream:
			dst = appendSegment(dst, pp.stream)
		case phTopic:
			dst = appendSegment(dst, pp.topic)
		case phPartition:
			dst = strconv.AppendUint(dst, uint64(pp.partition), 10)
		case phPayload:
			dst = append(dst, pp.values[s.field]...)
		case phDate:
			y, m, d := ts.Date()
			dst = appendYear(dst, y)
			dst = append(dst, '-')
			dst = appendPadded(dst, uint64(m), 2)
			dst = append(dst, '-')
			dst = appendPadded(dst, uint64(d), 2)
		case phHour:
			dst = appendPadded(dst, uint64(ts.Hour()), 2)
		case phTimestamp:
			dst = strconv.AppendUint(dst, tsMicros/1000, 10)
		case phYear:
			dst = appendYear(dst, ts.Year())
		case phMonth:
			dst = appendPadded(dst, uint64(ts.Month()), 2)
		case phDay:
			dst = appendPadded(dst, uint64(ts.Day()), 2)
		case phMinute:
			dst = appendPadded(dst, uint64(ts.Minute()), 2)
		}
	}
	return dst
}

// appendYear follows chrono's %Y: at least four digits, and a '+' for years
// past 9999 (only reachable with absurd timestamps).
func appendYear(dst []byte, y int) []byte {
	if y > 9999 {
		dst = append(dst, '+')
	}
	return appendPadded(dst, uint64(y), 4)
}

func appendFileName(dst []byte, partition uint32, first, last uint64) []byte {
	dst = appendPadded(dst, uint64(partition), 5)
	dst = append(dst, '-')
	dst = appendPadded(dst, first, 20)
	dst = append(dst, '-')
	return appendPadded(dst, last, 20)
}

// appendPadded appends v in decimal, zero-padded to at least width digits.
func appendPadded(dst []byte, v uint64, width int) []byte {
	var tmp [20]byte
	b := strconv.AppendUint(tmp[:0], v, 10)
	for i := len(b); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, b...)
}

func isSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// Sanitize replaces every character outside [A-Za-z0-9._-] with '_', one '_'
// per character (not per byte) as upstream does with Rust chars.
func Sanitize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if !isSafe(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return string(appendSanitized(make([]byte, 0, len(s)), s))
}

func appendSanitized(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if isSafe(c) {
				dst = append(dst, c)
			} else {
				dst = append(dst, '_')
			}
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		dst = append(dst, '_')
		i += size
	}
	return dst
}

// ParseObjectName parses the last path element of key, as ObjectKey renders it:
// "00001-00000000000000000000-00000000000000000099.jsonl.gz" gives 1, 0, 99, "jsonl.gz".
// Only canonical names are accepted (the exact form ObjectKey would render,
// with first <= last), so a listing can tell the sink's objects from others.
func ParseObjectName(key string) (partition uint32, first, last uint64, ext string, ok bool) {
	n, ok := parseName(key[strings.LastIndexByte(key, '/')+1:])
	if !ok || n.Generation != 0 {
		return 0, 0, 0, "", false
	}
	return n.Partition, n.First, n.Last, n.Ext, true
}

// parseDigits parses ASCII decimal digits only (no sign, no spaces).
func parseDigits(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

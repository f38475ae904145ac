package parquet

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// ErrInvalidJSON is wrapped by a RecordError whose payload is not valid JSON
// under schema json.
var ErrInvalidJSON = errors.New("payload is not valid JSON")

// ErrSchemaMismatch is wrapped by a RecordError whose payload does not fit
// the file's schema: a value of the wrong type for a pinned field, a missing
// or null required field, a top-level payload that is not an object under a
// pinned schema, or, with an inferred schema, a member pass 1 did not see
// (the record was not given to Observe).
var ErrSchemaMismatch = errors.New("payload does not match the schema")

// RecordError reports a record that was not written. Err wraps
// ErrInvalidJSON or ErrSchemaMismatch and says where; it never quotes
// payload values, which may be sensitive.
type RecordError struct {
	Offset uint64
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("parquet: record at offset %d: %v", e.Offset, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// shredder splits one JSON payload into the leaf columns of a schema
// (Dremel shredding: every leaf gets one entry per value or null, with its
// definition and repetition levels).
type shredder struct {
	sch   *schema
	src   []byte
	err   error
	stamp uint64
	kbuf  []byte // an unescaped member name
	sbuf  []byte // an unescaped string, or a value's compact JSON
	xbuf  []byte // members a pinned schema does not name (payload_extra)

	// sc validates (and compacts) the values the schema does not shred.
	sc *jsonscan.Scanner
}

func (s *shredder) invalid(end int) int {
	at := ^end
	if s.err == nil {
		s.err = fmt.Errorf("%w (at byte %d of %d)", ErrInvalidJSON, at, len(s.src))
	}
	return -1
}

func (s *shredder) mismatch(format string, args ...any) int {
	if s.err == nil {
		s.err = fmt.Errorf("%w: "+format, append([]any{ErrSchemaMismatch}, args...)...)
	}
	return -1
}

// jsonType names the type of the JSON value starting with c.
func jsonType(c byte) string {
	switch {
	case c == '"':
		return "string"
	case c == '{':
		return "object"
	case c == '[':
		return "array"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "null"
	}
	return "number"
}

func (s *shredder) wrongType(n *node, c byte) int {
	return s.mismatch("field %q: want %s, got %s", n.path, n.kind, jsonType(c))
}

// emitNull gives every leaf under n a null at definition level def.
func (s *shredder) emitNull(n *node, def, rep uint8) {
	for _, l := range s.sch.leaves[n.leafLo:n.leafHi] {
		l.col.addNull(def, rep)
	}
}

// payload shreds a JSON payload into the payload columns.
func (s *shredder) payload(p []byte) error {
	s.src, s.err = p, nil
	sch := s.sch
	i := jsonscan.SkipSpace(p, 0)
	if i >= len(p) {
		s.invalid(^i)
		return s.err
	}
	if p[i] != '{' {
		return s.nonObject(p, i)
	}
	s.xbuf = s.xbuf[:0]
	if i = s.object(sch.fields, i, 0); i < 0 {
		return s.err
	}
	if i = jsonscan.SkipSpace(p, i); i != len(p) {
		s.invalid(^i)
		return s.err
	}
	if sch.payload != nil {
		sch.payload.col.addNull(0, 0)
	}
	if sch.extra != nil {
		if len(s.xbuf) == 0 {
			sch.extra.col.addNull(0, 0)
		} else {
			s.xbuf[0] = '{' // replaces the first member's leading comma
			s.xbuf = append(s.xbuf, '}')
			sch.extra.col.addBytes(s.xbuf, 1, 0)
		}
	}
	return nil
}

// nonObject writes a payload that is a JSON array, string, number, bool or
// null as its compact text in the payload column.
func (s *shredder) nonObject(p []byte, i int) error {
	sch := s.sch
	var end int
	s.sbuf, end = s.sc.AppendCompactValue(s.sbuf[:0], p, i)
	if end < 0 {
		s.invalid(end)
		return s.err
	}
	if end = jsonscan.SkipSpace(p, end); end != len(p) {
		s.invalid(^end)
		return s.err
	}
	if sch.payload == nil {
		s.mismatch("the payload is a JSON %s, not an object", jsonType(p[i]))
		return s.err
	}
	sch.payload.col.addBytes(s.sbuf, 1, 0)
	s.emitNull(sch.fields, 0, 0)
	if sch.extra != nil {
		sch.extra.col.addNull(0, 0)
	}
	return nil
}

// value shreds the value at i (not whitespace) into n and returns the index
// after it, or -1 with s.err set. rep is the repetition level of the first
// entry it writes.
func (s *shredder) value(n *node, i int, rep uint8) int {
	src := s.src
	c := src[i]
	if c == 'n' {
		if jsonscan.ScanLiteral(src, i, "null") < 0 {
			return s.invalid(^i)
		}
		if n.kind != kindNull {
			if n.required {
				return s.mismatch("field %q: required, got null", n.path)
			}
			s.emitNull(n, n.def-1, rep)
		}
		return i + 4
	}
	switch n.kind {
	case kindString:
		return s.str(n, i, rep)
	case kindInt64, kindInt32, kindDouble:
		return s.number(n, i, rep)
	case kindBool:
		return s.boolean(n, i, rep)
	case kindJSON:
		var end int
		s.sbuf, end = s.sc.AppendCompactValue(s.sbuf[:0], src, i)
		if end < 0 {
			return s.invalid(end)
		}
		n.col.addBytes(s.sbuf, n.def, rep)
		return end
	case kindTimestamp:
		return s.timestamp(n, i, rep)
	case kindStruct:
		if c != '{' {
			return s.wrongType(n, c)
		}
		return s.object(n, i, rep)
	case kindList:
		if c != '[' {
			return s.wrongType(n, c)
		}
		return s.array(n, i, rep)
	}
	// kindNull: a field seen only as null, [] or {} has no column.
	end := s.sc.ScanValue(src, i)
	if end < 0 {
		return s.invalid(end)
	}
	return end
}

// str writes a JSON string, unescaped when it holds escapes.
func (s *shredder) str(n *node, i int, rep uint8) int {
	src := s.src
	if src[i] != '"' {
		return s.wrongType(n, src[i])
	}
	end, esc := jsonscan.ScanString(src, i)
	if end < 0 {
		return s.invalid(end)
	}
	b := src[i+1 : end-1]
	if esc {
		s.sbuf = jsonscan.AppendUnquote(s.sbuf[:0], src[i:end])
		b = s.sbuf
	}
	n.col.addBytes(b, n.def, rep)
	return end
}

func (s *shredder) boolean(n *node, i int, rep uint8) int {
	src := s.src
	var end int
	switch src[i] {
	case 't':
		end = jsonscan.ScanLiteral(src, i, "true")
	case 'f':
		end = jsonscan.ScanLiteral(src, i, "false")
	default:
		return s.wrongType(n, src[i])
	}
	if end < 0 {
		return s.invalid(end)
	}
	n.col.addBool(src[i] == 't', n.def, rep)
	return end
}

func (s *shredder) number(n *node, i int, rep uint8) int {
	src := s.src
	if c := src[i]; c != '-' && (c < '0' || c > '9') {
		return s.wrongType(n, c)
	}
	end, isInt := jsonscan.ScanNumber(src, i)
	if end < 0 {
		return s.invalid(end)
	}
	num := src[i:end]
	if n.kind == kindDouble {
		n.col.addDouble(parseFloat(num, isInt), n.def, rep)
		return end
	}
	v, ok := parseInt64(num)
	if !isInt || !ok {
		return s.mismatch("field %q: want %s, got a number that is not one", n.path, n.kind)
	}
	if n.kind == kindInt32 {
		if v != int64(int32(v)) {
			return s.mismatch("field %q: want int32, got a number out of its range", n.path)
		}
		n.col.addInt32(int32(v), n.def, rep)
		return end
	}
	n.col.addInt64(v, n.def, rep)
	return end
}

// timestamp converts an RFC 3339 string to microseconds since the epoch.
func (s *shredder) timestamp(n *node, i int, rep uint8) int {
	src := s.src
	if src[i] != '"' {
		return s.wrongType(n, src[i])
	}
	end, esc := jsonscan.ScanString(src, i)
	if end < 0 {
		return s.invalid(end)
	}
	b := src[i+1 : end-1]
	if esc {
		s.sbuf = jsonscan.AppendUnquote(s.sbuf[:0], src[i:end])
		b = s.sbuf
	}
	t, err := time.Parse(time.RFC3339Nano, unsafe.String(unsafe.SliceData(b), len(b)))
	if err != nil {
		return s.mismatch("field %q: want an RFC 3339 timestamp", n.path)
	}
	n.col.addInt64(t.UnixMicro(), n.def, rep)
	return end
}

// object shreds the object at i into struct node n. A member the schema
// does not know is dropped, kept in payload_extra, or refused, as the
// schema says; of duplicate members the first one wins.
func (s *shredder) object(n *node, i int, rep uint8) int {
	src := s.src
	s.stamp++
	st := s.stamp
	i = jsonscan.SkipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		i++
	} else {
		for pos := 0; ; pos++ {
			if i = s.member(n, i, pos, st, rep); i < 0 {
				return -1
			}
			if i = jsonscan.SkipSpace(src, i); i >= len(src) {
				return s.invalid(^i)
			}
			if src[i] == '}' {
				i++
				break
			}
			if src[i] != ',' {
				return s.invalid(^i)
			}
			i = jsonscan.SkipSpace(src, i+1)
		}
	}
	for _, c := range n.children {
		if c.stamp != st && c.hasColumn() {
			if c.required {
				return s.mismatch("field %q: required, missing", c.path)
			}
			s.emitNull(c, n.def, rep)
		}
	}
	return i
}

// member shreds the member at i, the pos-th of the object instance st.
func (s *shredder) member(n *node, i, pos int, st uint64, rep uint8) int {
	src := s.src
	if i >= len(src) || src[i] != '"' {
		return s.invalid(^i)
	}
	keyAt := i
	end, esc := jsonscan.ScanString(src, i)
	if end < 0 {
		return s.invalid(end)
	}
	key := src[i+1 : end-1]
	if esc {
		s.kbuf = jsonscan.AppendUnquote(s.kbuf[:0], src[i:end])
		key = s.kbuf
	}
	child := n.lookup(key, pos)
	i = jsonscan.SkipSpace(src, end)
	if i >= len(src) || src[i] != ':' {
		return s.invalid(^i)
	}
	if i = jsonscan.SkipSpace(src, i+1); i >= len(src) {
		return s.invalid(^i)
	}
	switch {
	case child == nil:
		return s.unknown(n, keyAt, end, i)
	case child.stamp == st:
		if i = s.sc.ScanValue(src, i); i < 0 {
			return s.invalid(i)
		}
		return i
	}
	child.stamp = st
	return s.value(child, i, rep)
}

// unknown handles a member (name at src[keyAt:keyEnd]) the struct n does
// not name; the value starts at i.
func (s *shredder) unknown(n *node, keyAt, keyEnd, i int) int {
	src := s.src
	sch := s.sch
	if n == sch.fields && sch.extra != nil {
		s.xbuf = append(s.xbuf, ',')
		s.xbuf = append(s.xbuf, src[keyAt:keyEnd]...)
		s.xbuf = append(s.xbuf, ':')
		var end int
		if s.xbuf, end = s.sc.AppendCompactValue(s.xbuf, src, i); end < 0 {
			return s.invalid(end)
		}
		return end
	}
	if sch.inferred {
		return s.mismatch("field %q is not in the inferred schema (was the record observed?)", n.path+"."+string(src[keyAt+1:keyEnd-1]))
	}
	end := s.sc.ScanValue(src, i)
	if end < 0 {
		return s.invalid(end)
	}
	return end
}

// array shreds the array at i into list node n: the first element takes
// rep, the others the list's own repetition level.
func (s *shredder) array(n *node, i int, rep uint8) int {
	src := s.src
	e := n.elem
	i = jsonscan.SkipSpace(src, i+1)
	if i < len(src) && src[i] == ']' {
		s.emitNull(e, n.def, rep) // present and empty
		return i + 1
	}
	for r := rep; ; r = n.elemRep {
		if i >= len(src) {
			return s.invalid(^i)
		}
		if i = s.value(e, i, r); i < 0 {
			return -1
		}
		if i = jsonscan.SkipSpace(src, i); i >= len(src) {
			return s.invalid(^i)
		}
		if src[i] == ']' {
			return i + 1
		}
		if src[i] != ',' {
			return s.invalid(^i)
		}
		i = jsonscan.SkipSpace(src, i+1)
	}
}

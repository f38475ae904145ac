package fields

import (
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// Reader renders the value of a record: the folder segment of each of the
// template's payload fields, read from the payload as the record holds it
// (compact, transformed). It keeps scratch buffers, so it is not safe for
// concurrent use.
type Reader struct {
	paths [][]string
	def   string
	doc   []byte
	text  []byte
	value []byte
}

// New returns a Reader of the fields paths (keys.Template.PayloadFields),
// rendering records without a scalar there as def.
func New(paths [][]string, def string) *Reader {
	return &Reader{paths: paths, def: def}
}

// Sep joins the segments of a value: no segment holds it.
const Sep = "/"

// Value returns m's value as enc renders m: the segments of every field
// (keys.AppendValueSegment's), joined by Sep. A payload that is not JSON,
// or that enc's transforms refuse, has every field at the default segment
// (the record follows the invalid-payload policy in that value's object).
func (r *Reader) Value(enc *batch.Encoder, m *batch.Message) string {
	var ok bool
	r.doc, ok = enc.PayloadJSON(r.doc[:0], m)
	return string(r.Of(r.doc, ok, enc.PayloadMembers()))
}

// Of is the value of a record whose payload, as it holds it, is doc
// (Encoder.PayloadJSON's; isJSON false when that failed), with its
// top-level members when known (Encoder.PayloadMembers; nil: doc is read
// for them). It returns a buffer of r's, valid until the next call.
func (r *Reader) Of(doc []byte, isJSON bool, members []jsonscan.Member) []byte {
	r.value = r.value[:0]
	for i, path := range r.paths {
		if i > 0 {
			r.value = append(r.value, Sep...)
		}
		r.value = r.appendField(r.value, doc, isJSON, members, path)
	}
	return r.value
}

// appendField appends the segment of the field at path of doc.
func (r *Reader) appendField(dst, doc []byte, isJSON bool, members []jsonscan.Member, path []string) []byte {
	if !isJSON {
		return append(dst, r.def...)
	}
	var start, end int
	var found bool
	if members != nil {
		start, end, found = jsonscan.LookupMembers(doc, members, path)
	} else {
		start, end, found = jsonscan.Lookup(doc, path)
	}
	if !found {
		return append(dst, r.def...)
	}
	lit := doc[start:end]
	switch lit[0] {
	case '"':
		r.text = jsonscan.AppendUnquote(r.text[:0], lit)
		return keys.AppendValueSegment(dst, r.text, r.def)
	case '{', '[', 'n':
		return append(dst, r.def...) // an object, an array, null
	}
	return keys.AppendValueSegment(dst, lit, r.def) // a number, true, false
}

// Segments splits a value into its segments, one per field.
func Segments(value string) []string { return strings.Split(value, Sep) }

package fields

import "github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"

// Unit is a unit split by the payload fields' values: each record goes
// to the object of its value (batch.Split). The drain fills one, and
// `poller render` counts units with one, the same way.
type Unit struct {
	*batch.Split
	values *Reader
	enc    *batch.Encoder
	doc    []byte
}

// NewUnit returns an empty unit of s whose records enc renders (it asks
// enc to record the payloads' members) and whose values values reads.
func NewUnit(s *batch.Split, enc *batch.Encoder, values *Reader) *Unit {
	enc.RecordMembers()
	return &Unit{Split: s, values: values, enc: enc}
}

// Add puts m in the object of its value (batch.Split.Add). The payload is
// prepared once, for its value and its record.
func (u *Unit) Add(m *batch.Message) (bool, error) {
	var ok bool
	u.doc, ok = u.enc.PayloadJSON(u.doc[:0], m)
	value := u.values.Of(u.doc, ok, u.enc.PayloadMembers())
	if ok {
		p := batch.Prepared(m, u.doc)
		m = &p
	}
	return u.Split.Add(m, value)
}

package drain

import (
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fields"
)

// records is what the reader fills and the writer renders: one object's
// records (*batch.Accumulator), or, under a path template with payload
// fields, one unit's, split by value (*valueUnit).
type records interface {
	Add(m *batch.Message) (bool, error)
	Full() bool
	Due(now time.Time) bool
	Len() int
	First() uint64
	Last() uint64
	FirstTimestamp() uint64
	LastTimestamp() uint64
	Spilled() bool
	Reset()
	Release()
}

// valueUnit is a unit split by the payload fields' values: each record
// goes to the object of its value.
type valueUnit struct {
	*batch.Split
	values *fields.Reader
	enc    *batch.Encoder
	doc    []byte
}

// Add puts m in the object of its value (batch.Split.Add). The payload is
// prepared once, for its value and its record.
func (u *valueUnit) Add(m *batch.Message) (bool, error) {
	var ok bool
	u.doc, ok = u.enc.PayloadJSON(u.doc[:0], m)
	value := u.values.Of(u.doc, ok, u.enc.PayloadMembers())
	if ok {
		p := batch.Prepared(m, u.doc)
		m = &p
	}
	return u.Split.Add(m, value)
}

// newRecords returns an empty object, or unit, for the reader's encoder.
func (p *partition) newRecords(enc *batch.Encoder) records {
	o := &p.r.Options
	if !o.Names.HasValues() {
		return batch.NewAccumulator(enc, o.Rotation, o.KeepLimit)
	}
	enc.RecordMembers()
	return &valueUnit{Split: batch.NewSplit(enc, o.Rotation, o.KeepLimit, o.MaxValues), values: p.valueReader(), enc: enc}
}

// valueReader reads the values of the path template's payload fields.
func (p *partition) valueReader() *fields.Reader {
	n := p.r.Options.Names
	return fields.New(n.PayloadFields(), n.DefaultSegment())
}

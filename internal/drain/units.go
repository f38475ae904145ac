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

// valueUnit is a unit split by the payload fields' values.
type valueUnit = fields.Unit

// newRecords returns an empty object, or unit, for the reader's encoder.
func (p *partition) newRecords(enc *batch.Encoder) records {
	o := &p.r.Options
	if !o.Names.HasValues() {
		return batch.NewAccumulator(enc, o.Rotation, o.KeepLimit)
	}
	return fields.NewUnit(batch.NewSplit(enc, o.Rotation, o.KeepLimit, o.MaxValues), enc, p.valueReader())
}

// valueReader reads the values of the path template's payload fields.
func (p *partition) valueReader() *fields.Reader {
	n := p.r.Options.Names
	return fields.New(n.PayloadFields(), n.DefaultSegment())
}

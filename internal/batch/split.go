package batch

import "time"

// Split builds one unit of a partition split by payload values: the
// offsets one object would hold, as one Accumulator per value. The unit
// rotates as one object would (its size is its value objects' sizes
// together, its count their records, its age and period its first
// message's), and holds at most maxValues values: a message of one more
// ends it. Its bytes stay in memory while they all fit in keepLimit;
// beyond that every value spills (the caller re-renders the range).
type Split struct {
	enc       *Encoder
	rot       Rotation
	keep      int64
	maxValues int

	parts  map[string]*Accumulator
	values []string // in the order of their first record
	free   []*Accumulator

	size                         int64
	n                            int
	first, last, firstTS, lastTS uint64
	spilled, rejected            bool
}

// NewSplit returns an empty unit; maxValues below 1 counts as 1.
func NewSplit(e *Encoder, r Rotation, keepLimit int64, maxValues int) *Split {
	return &Split{enc: e, rot: r, keep: keepLimit, maxValues: max(maxValues, 1), parts: map[string]*Accumulator{}}
}

// Add encodes m into the object of value and reports whether it fitted,
// as Accumulator.Add does for the whole unit: false, leaving the unit
// unchanged, when the unit is non-empty and m would push it over MaxBytes
// or MaxMessages, is of another Cut period, or brings a value past
// maxValues. An empty unit always accepts m.
func (s *Split) Add(m *Message, value []byte) (bool, error) {
	a := s.parts[string(value)]
	if s.n > 0 && (s.rot.MaxMessages > 0 && uint64(s.n) >= s.rot.MaxMessages ||
		s.rot.Cut != NoCut && s.rot.Cut.Period(m.Timestamp) != s.rot.Cut.Period(s.firstTS) ||
		a == nil && len(s.values) >= s.maxValues) {
		s.rejected = true
		return false, nil
	}
	isNew := a == nil
	if isNew {
		a = s.take()
	}
	others := s.size - a.size
	if isNew {
		others = s.size
	}
	a.part = s.n > 0
	a.rot.MaxBytes = 0
	if s.rot.MaxBytes > 0 {
		a.rot.MaxBytes = s.rot.MaxBytes - others
		if a.rot.MaxBytes < 1 && s.n > 0 {
			s.rejected = true
			s.giveBack(a, isNew)
			return false, nil
		}
	}
	a.keep = s.keep - others
	if s.spilled {
		a.keep = 0
	}
	before := a.size
	ok, err := a.Add(m)
	if err != nil || !ok {
		s.rejected = s.rejected || !ok && err == nil
		s.giveBack(a, isNew)
		return ok, err
	}
	if isNew {
		v := string(value)
		s.parts[v] = a
		s.values = append(s.values, v)
		s.size += a.size
	} else {
		s.size += a.size - before
	}
	if s.n == 0 {
		s.first, s.firstTS = m.Offset, m.Timestamp
	}
	s.last, s.lastTS = m.Offset, m.Timestamp
	s.n++
	if !s.spilled && (a.spilled || s.size > s.keep) {
		s.spilled = true
		for _, p := range s.parts {
			p.spill(0)
		}
	}
	return true, nil
}

// take returns an empty accumulator for a new value.
func (s *Split) take() *Accumulator {
	if n := len(s.free); n > 0 {
		a := s.free[n-1]
		s.free = s.free[:n-1]
		return a
	}
	a := NewAccumulator(s.enc, Rotation{}, s.keep)
	a.part, a.value = true, true
	return a
}

// giveBack returns a new value's accumulator that took no record.
func (s *Split) giveBack(a *Accumulator, isNew bool) {
	if isNew {
		a.Reset()
		s.free = append(s.free, a)
	}
}

// Full reports that no further record can fit, as Accumulator.Full does
// for the whole unit.
func (s *Split) Full() bool {
	if s.rejected {
		return true
	}
	if s.n == 0 {
		return false
	}
	if s.rot.MaxMessages > 0 && uint64(s.n) >= s.rot.MaxMessages {
		return true
	}
	return s.rot.MaxBytes > 0 && s.size >= s.rot.MaxBytes
}

// Due reports that the unit is non-empty and its first message's server
// timestamp is more than MaxAge before now.
func (s *Split) Due(now time.Time) bool {
	if s.n == 0 || s.rot.MaxAge <= 0 {
		return false
	}
	return now.Sub(time.UnixMicro(int64(s.firstTS))) > s.rot.MaxAge
}

// Len is the number of records in the unit, of every value.
func (s *Split) Len() int { return s.n }

// Size is the unit's uncompressed size: its value objects' together.
func (s *Split) Size() int64 { return s.size }

// First is the offset of the unit's first message.
func (s *Split) First() uint64 { return s.first }

// Last is the offset of the unit's last message.
func (s *Split) Last() uint64 { return s.last }

// FirstTimestamp is the server timestamp (µs) of the unit's first message.
func (s *Split) FirstTimestamp() uint64 { return s.firstTS }

// LastTimestamp is the server timestamp (µs) of the unit's last message.
func (s *Split) LastTimestamp() uint64 { return s.lastTS }

// Spilled reports that the unit outgrew keepLimit and the bytes of every
// value were dropped.
func (s *Split) Spilled() bool { return s.spilled }

// Values are the unit's values in the order of their first record.
func (s *Split) Values() []string { return s.values }

// Part is the accumulator of one of the unit's values (nil for another).
func (s *Split) Part(value string) *Accumulator { return s.parts[value] }

// Reset empties the unit, keeping its accumulators for reuse, and their
// buffers as long as they hold no more than twice keepLimit together (a
// value that filled one unit may have none in the next).
func (s *Split) Reset() {
	var held int64
	for _, a := range s.free {
		held += a.held()
	}
	for _, v := range s.values {
		a := s.parts[v]
		if held += a.held(); held > 2*max(s.keep, 1<<20) {
			a.Release()
		}
		a.Reset()
		s.free = append(s.free, a)
	}
	clear(s.parts)
	s.values = s.values[:0]
	s.size, s.n = 0, 0
	s.first, s.last, s.firstTS, s.lastTS = 0, 0, 0, 0
	s.spilled, s.rejected = false, false
}

// Release gives every buffer back (see Accumulator.Release); the unit
// stays usable.
func (s *Split) Release() {
	s.Reset()
	for _, a := range s.free {
		a.Release()
	}
	s.free = nil
}

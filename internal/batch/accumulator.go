package batch

import (
	"sync"
	"time"
)

// Rotation decides object boundaries. Size counts the uncompressed object
// bytes including framing; an object never exceeds MaxBytes unless a single
// record alone does, and never holds more than MaxMessages records.
type Rotation struct {
	MaxBytes    int64         // 0 = no size limit
	MaxMessages uint64        // 0 = no count limit
	MaxAge      time.Duration // 0 = never due by age
	// Cut ends an object before a message of another UTC calendar period
	// (by server time), so that each object lies in one partition of a
	// table partitioned by that period. NoCut (0) lets objects span any time.
	Cut Cut
}

// Cut is a UTC calendar period that no object spans.
type Cut uint8

// The cuts, as Iceberg's time transforms name them.
const (
	NoCut Cut = iota
	CutHour
	CutDay
	CutMonth
	CutYear
)

// Period numbers the period of a server timestamp (µs since the epoch):
// two timestamps are in one period exactly when their numbers are equal.
func (c Cut) Period(micros uint64) int64 {
	t := time.UnixMicro(int64(micros)).UTC()
	switch c {
	case CutHour:
		return t.Unix() / 3600
	case CutDay:
		return t.Unix() / 86400
	case CutMonth:
		return int64(t.Year())*12 + int64(t.Month())
	case CutYear:
		return int64(t.Year())
	}
	return 0
}

// String names the cut as Iceberg's time transforms do ("" for NoCut).
func (c Cut) String() string {
	return [...]string{"", "hour", "day", "month", "year"}[c]
}

// crosses reports that m would start another period than the object's first message.
func (a *Accumulator) crosses(m *Message) bool {
	return a.n > 0 && a.rot.Cut != NoCut && a.rot.Cut.Period(m.Timestamp) != a.rot.Cut.Period(a.firstTS)
}

// Accumulator builds one object of one partition. It keeps the object's
// bytes in memory up to keepLimit bytes; beyond that it keeps counting sizes
// but drops the bytes (Spilled reports it), so that the caller re-renders
// the range by streaming through an ObjectWriter with bounded memory.
//
// Under invalid_payload "error_object" the records rejected to the error
// object count towards the size as their error lines. For format parquet
// it keeps the messages (payloads prepared: validated, compacted,
// transformed) and writes the file when Render or Bytes asks for it; its
// size is then the messages' payload and header bytes, the file's input.
type Accumulator struct {
	enc  *Encoder
	rot  Rotation
	keep int64

	buf     []byte // header + records while not spilled
	errs    []byte // error-object lines while not spilled (error_object)
	scratch []byte // where records are rendered once spilled
	pq      *pqStore

	emptySize int64 // header + trailer
	minRecord int64 // the smallest record any message can render to
	size      int64
	n         int // messages, rows and rejected records
	data      int // records in the data object (json_array framing)
	first     uint64
	last      uint64
	firstTS   uint64
	lastTS    uint64
	spilled   bool
	rejected  bool
	// part is set on the accumulator of one value of a Split while its
	// unit is not empty: its size limit holds even when it is empty.
	part bool
	// value is set on every accumulator of a Split: its buffer comes from
	// partBuffers and grows through them as it fills, instead of being
	// sized for a whole object.
	value bool
}

// NewAccumulator returns an empty accumulator. keepLimit bounds the bytes
// held in memory; keepLimit ≤ 0 keeps none (sizes are still counted).
func NewAccumulator(e *Encoder, r Rotation, keepLimit int64) *Accumulator {
	a := &Accumulator{enc: e, rot: r, keep: keepLimit}
	a.emptySize = int64(len(e.AppendHeader(nil)) + len(e.AppendTrailer(nil)))
	a.minRecord = minRecordSize(e)
	if e.format == fmtParquet {
		a.pq = &pqStore{}
	}
	a.Reset()
	return a
}

// minRecordSize is the length of the shortest framed record e can produce
// after the first one: a one-byte payload value at offset 0 without headers.
func minRecordSize(e *Encoder) int64 {
	if e.format == fmtRaw || e.format == fmtParquet {
		return 0
	}
	probe := *e
	probe.headers = false
	probe.transformer = nil
	probe.schema = schJSON
	rec, err := probe.AppendRecord(nil, &Message{Payload: []byte("0")}, false)
	if err != nil {
		return 0
	}
	return int64(len(rec))
}

// Add encodes m and appends it if it fits. It returns false, leaving the
// object unchanged, when the object is non-empty and m would push it over
// MaxBytes or MaxMessages, or is of another Cut period than the first
// message: the object is full and m starts the next one. An
// empty object always accepts m. An encoding error leaves the object
// unchanged too.
func (a *Accumulator) Add(m *Message) (bool, error) {
	if a.n > 0 && a.rot.MaxMessages > 0 && uint64(a.n) >= a.rot.MaxMessages || a.crosses(m) {
		// A Split checks these over its unit: its parts have neither.
		a.rejected = true
		return false, nil
	}
	if a.n == 0 && !a.spilled {
		a.presize()
	}
	if a.pq != nil {
		return a.addParquet(m)
	}
	if a.value && !a.spilled {
		a.reserve(len(m.Payload) + 2*len(m.Headers) + recordSlack)
	}
	target, lines := a.buf, a.errs
	if a.spilled {
		target, lines = a.scratch[:0], a.scratch[:0]
	}
	start, lstart := len(target), len(lines)
	invalid, bad := a.enc.invalid, a.enc.badHeaders
	out, err := a.enc.AppendRecord(target, m, a.data == 0)
	rejected := err == ErrRejected
	var recLen int64
	switch {
	case rejected:
		lines = a.enc.lines.append(lines, m, m.Payload, invalidReason(a.enc.rejAt, len(m.Payload)))
		recLen = int64(len(lines) - lstart)
	case err != nil:
		return false, err
	default:
		recLen = int64(len(out) - start)
	}
	if (a.n > 0 || a.part) && a.rot.MaxBytes > 0 && a.size+recLen > a.rot.MaxBytes {
		// m is rendered again for the next object: count it there, not twice.
		a.enc.invalid, a.enc.badHeaders = invalid, bad
		a.keepBuffers(out[:start], lines[:lstart])
		a.rejected = true
		return false, nil
	}
	a.size += recLen
	a.note(m)
	if !rejected {
		a.data++
	}
	switch {
	case a.spilled:
		a.keepBuffers(out[:0], lines[:0])
	case a.size > a.keep:
		// The bytes so far are no longer needed: the caller re-renders the
		// range. Keep only a scratch buffer the size of one record.
		last := out[start:]
		if rejected {
			last = lines[lstart:]
		}
		a.spill(len(last))
	default:
		a.buf, a.errs = out, lines
	}
	return true, nil
}

// keepBuffers takes back the (possibly grown) buffers a record was
// rendered into.
func (a *Accumulator) keepBuffers(out, lines []byte) {
	if a.spilled {
		if cap(lines) > cap(out) {
			out = lines
		}
		a.scratch = out[:0]
		return
	}
	a.buf, a.errs = out, lines
}

// spill drops the bytes kept so far: the caller re-renders the range.
// Only a scratch buffer of room bytes stays.
func (a *Accumulator) spill(room int) {
	if a.spilled {
		return
	}
	a.spilled = true
	a.scratch = make([]byte, 0, room)
	a.buf, a.errs = nil, nil
	if a.pq != nil {
		a.pq.arena, a.pq.recs = nil, nil
	}
}

// held is the capacity of the buffers the accumulator keeps.
func (a *Accumulator) held() int64 {
	n := cap(a.buf) + cap(a.errs) + cap(a.scratch)
	if a.pq != nil {
		n += cap(a.pq.arena)
	}
	return int64(n)
}

// note records m as the object's latest message.
func (a *Accumulator) note(m *Message) {
	if a.n == 0 {
		a.first, a.firstTS = m.Offset, m.Timestamp
	}
	a.last, a.lastTS = m.Offset, m.Timestamp
	a.n++
}

// presize gives the buffer, once, the capacity an object will need, so that
// filling it never copies: the size threshold (up to keepLimit) when
// rotating by size, else a modest start that append grows.
func (a *Accumulator) presize() {
	if a.value {
		// A value's object grows as it fills (see reserve).
		a.reserve(0)
		return
	}
	if a.keep <= 0 {
		return
	}
	want := a.keep
	if a.rot.MaxBytes > 0 {
		want = min(want, a.rot.MaxBytes)
	} else {
		want = min(want, 1<<20)
	}
	want += 64 << 10 // the record that does not fit is rendered before it is refused
	if a.pq != nil {
		if int64(cap(a.pq.arena)) < want {
			a.pq.arena = takeBuffer(want)
		}
		return
	}
	if int64(cap(a.buf)) >= want {
		return
	}
	buf := takeBuffer(want)[:len(a.buf)]
	copy(buf, a.buf)
	a.buf = buf
}

// objectBuffers recycles the object-sized buffers of accumulators that are
// done with (Release), so that a run does not allocate, zero and collect
// one per object. A few are kept, whatever the garbage collector does (a
// sync.Pool empties at every other collection, and 8 MiB buffers bring
// collections often): a run has one accumulator per partition drained at
// once (partition_concurrency, 4 by default) and one more (the read-ahead
// slot), and a warm Lambda's next run wants them all again. A buffer is
// kept only after it was used, so the pool never holds more than a run
// had at once: it never raises the peak.
var objectBuffers = make(chan []byte, 8)

// minPooled is the smallest buffer worth recycling.
const minPooled = 1 << 20

func takeBuffer(want int64) []byte {
	select {
	case b := <-objectBuffers:
		if int64(cap(b)) >= want {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, want)
}

func putBuffer(b []byte) {
	if cap(b) < minPooled {
		return
	}
	select {
	case objectBuffers <- b[:0]:
	default:
	}
}

// partBuffers recycles the buffers of a Split's values, which are smaller
// than objectBuffers keeps and grow as their values fill: a run drains unit
// after unit, and a partition after another, each with an object per
// value, and a value's buffer outgrown is another's to fill. Buffers are
// kept by size class (minPart << c bytes and more in class c), at most
// partPoolBytes together.
var partBuffers struct {
	mu      sync.Mutex
	classes [partClasses][][]byte
	bytes   int64
}

const (
	minPart       = 4 << 10 // a unit of many values holds many small ones
	partClasses   = 14      // up to 32 MiB, a unit's most
	partPoolBytes = 64 << 20
	// recordSlack is room, beyond its payload and headers, that a record
	// takes in a value's buffer: its metadata, escapes aside (append grows
	// the buffer for those, as for any slice).
	recordSlack = 1 << 10
)

// reserve makes room for n more bytes in a value's buffer: a buffer of
// twice the size, or more, from partBuffers takes its bytes, and the
// outgrown one goes back there.
func (a *Accumulator) reserve(n int) {
	if cap(a.buf)-len(a.buf) >= n && cap(a.buf) >= minPart {
		return
	}
	b := takePartBuffer(max(2*cap(a.buf), len(a.buf)+n, minPart))
	b = append(b, a.buf...)
	putPartBuffer(a.buf)
	a.buf = b
}

// partClass is the smallest class whose every buffer holds n bytes
// (partClasses when none does).
func partClass(n int) int {
	c := 0
	for c < partClasses && minPart<<c < n {
		c++
	}
	return c
}

// takePartBuffer returns an empty buffer of at least want bytes, kept or
// new (rounded up to its class, so that it is kept in that class later).
func takePartBuffer(want int) []byte {
	c := partClass(want)
	if c == partClasses {
		return make([]byte, 0, want)
	}
	partBuffers.mu.Lock()
	for k := c; k < min(c+2, partClasses); k++ { // not much bigger than asked
		if bufs := partBuffers.classes[k]; len(bufs) > 0 {
			b := bufs[len(bufs)-1]
			partBuffers.classes[k] = bufs[:len(bufs)-1]
			partBuffers.bytes -= int64(cap(b))
			partBuffers.mu.Unlock()
			return b[:0]
		}
	}
	partBuffers.mu.Unlock()
	return make([]byte, 0, minPart<<c)
}

// putPartBuffer keeps b for takePartBuffer, in the largest class it fills.
func putPartBuffer(b []byte) {
	if cap(b) < minPart {
		return
	}
	c := partClass(cap(b) + 1)
	if c > 0 {
		c-- // the largest class whose size b holds
	}
	partBuffers.mu.Lock()
	defer partBuffers.mu.Unlock()
	if partBuffers.bytes+int64(cap(b)) > partPoolBytes {
		return
	}
	partBuffers.classes[c] = append(partBuffers.classes[c], b[:0])
	partBuffers.bytes += int64(cap(b))
}

// Release gives the accumulator's buffers to other accumulators; what
// Render or Bytes returned must not be used after it. The accumulator
// stays usable (as a new one).
func (a *Accumulator) Release() {
	if a.value {
		putPartBuffer(a.buf)
	} else {
		putBuffer(a.buf)
	}
	a.buf = nil
	if a.pq != nil {
		putBuffer(a.pq.arena)
		a.pq.arena = nil
	}
	a.Reset()
}

// Full reports that no further record can fit: the count is reached, the
// size leaves no room for the smallest possible record, or the last Add
// returned false.
func (a *Accumulator) Full() bool {
	if a.rejected {
		return true
	}
	if a.n == 0 {
		return false
	}
	if a.rot.MaxMessages > 0 && uint64(a.n) >= a.rot.MaxMessages {
		return true
	}
	return a.rot.MaxBytes > 0 && (a.size >= a.rot.MaxBytes || a.size+a.minRecord > a.rot.MaxBytes)
}

// Due reports that the object is non-empty and its first message's server
// timestamp is more than MaxAge before now.
func (a *Accumulator) Due(now time.Time) bool {
	if a.n == 0 || a.rot.MaxAge <= 0 {
		return false
	}
	return now.Sub(time.UnixMicro(int64(a.firstTS))) > a.rot.MaxAge
}

// Len is the number of records in the object.
func (a *Accumulator) Len() int { return a.n }

// Size is the uncompressed object size, header and trailer included.
func (a *Accumulator) Size() int64 { return a.size }

// First is the offset of the object's first message.
func (a *Accumulator) First() uint64 { return a.first }

// Last is the offset of the object's last message.
func (a *Accumulator) Last() uint64 { return a.last }

// FirstTimestamp is the server timestamp (µs) of the first message.
func (a *Accumulator) FirstTimestamp() uint64 { return a.firstTS }

// LastTimestamp is the server timestamp (µs) of the last message.
func (a *Accumulator) LastTimestamp() uint64 { return a.lastTS }

// Spilled reports that the object outgrew keepLimit and its bytes were
// dropped; Bytes is then unavailable.
func (a *Accumulator) Spilled() bool { return a.spilled }

// Bytes returns the complete uncompressed object (header, records,
// trailer). It is valid only if !Spilled() and aliases the internal buffer
// until the next Add or Reset. It is nil when the Parquet file could not be
// written (Render returns why).
func (a *Accumulator) Bytes() []byte {
	data, _, err := a.Render()
	if err != nil {
		return nil
	}
	return data
}

// Render returns the complete uncompressed object and its error object:
// the lines of the records rejected to it (invalid_payload "error_object"),
// nil when there are none. Both are valid only if !Spilled() and alias
// internal buffers until the next Add or Reset. For format parquet, the
// first call writes the file (both passes over the kept messages); it does
// not touch the Encoder's state, so the Encoder may fill another
// Accumulator meanwhile.
func (a *Accumulator) Render() (data, errs []byte, err error) {
	if a.spilled {
		return nil, nil, nil
	}
	if a.pq != nil {
		if err := a.build(); err != nil {
			return nil, nil, err
		}
		if len(a.pq.errs) > 0 {
			errs = a.pq.errs
		}
		return a.pq.out, errs, nil
	}
	if len(a.errs) > 0 {
		errs = a.errs
	}
	return a.enc.AppendTrailer(a.buf), errs, nil
}

// Reset empties the object, keeping its buffers for reuse.
func (a *Accumulator) Reset() {
	a.buf = a.enc.AppendHeader(a.buf[:0])
	a.errs = a.errs[:0]
	a.scratch = a.scratch[:0]
	if a.pq != nil {
		a.pq.reset()
	}
	a.size = a.emptySize
	a.n, a.data = 0, 0
	a.first, a.last, a.firstTS, a.lastTS = 0, 0, 0, 0
	a.spilled = false
	a.rejected = false
}

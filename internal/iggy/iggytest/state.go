package iggytest

import (
	"encoding/binary"
	"math"
	"sort"
	"time"

	"github.com/zeebo/xxh3"
)

// stream, topic and partition hold the broker's in-memory data; every field is
// guarded by Broker.mu.
type stream struct {
	id        uint32
	name      string
	createdAt uint64
	topics    []*topic // index = id; nil = deleted slot
}

type topic struct {
	id           uint32
	name         string
	createdAt    uint64
	compression  uint8
	expiry       uint64
	maxSize      uint64
	replication  uint8
	options      []byte // the options block a VSR CreateTopic carried
	partitions   []*partition
	groups       []*group
	balancedNext uint32
}

type partition struct {
	id        uint32
	createdAt uint64
	msgs      []message // by increasing offset; holes allowed (SkipOffsets, DeleteBelow)
	next      uint64    // offset the next message gets
	last      uint64    // offset of the newest message ever written
	written   bool      // whether any message was ever written
	lastStamp uint64
	sizeBytes uint64
	consumers map[string]uint64 // single-consumer offsets by identifier key
	groups    map[uint32]uint64 // group offsets by group id
	// 0.10: incarnation (broker-wide counter, new for every created
	// partition), the metadata op that created it, and the replica that is
	// its primary (-1: this broker).
	incarnation uint64
	metaOp      uint64
	primary     int
}

// message is one stored message, whatever protocol sent it. Offset, times,
// id and send batch are its own fields; payload and user headers live in
// raw, its 0.8 rendering (64-byte header, payload, user headers), which is
// built once at append so that 0.8 polls copy bytes as before. VSR polls
// render batch records from the fields (see appendVSRRecords).
type message struct {
	offset uint64
	stamp  uint64 // server time (µs): one value for a whole send batch
	origin uint64 // producer time (µs)
	// batchBase is the offset of the first message of the send batch the
	// message came in, batchOrigin that batch's earliest origin time.
	batchBase   uint64
	batchOrigin uint64
	id          [16]byte
	raw         []byte
}

func (m *message) payload() []byte {
	n := binary.LittleEndian.Uint32(m.raw[52:56])
	return m.raw[messageHeaderSize : messageHeaderSize+n]
}

func (m *message) headers() []byte {
	n := binary.LittleEndian.Uint32(m.raw[52:56])
	return m.raw[messageHeaderSize+n:]
}

func newPartition(id uint32, now uint64, incarnation, metaOp uint64) *partition {
	return &partition{id: id, createdAt: now, consumers: map[string]uint64{}, groups: map[uint32]uint64{},
		incarnation: incarnation, metaOp: metaOp, primary: -1}
}

// currentOffset is the highest offset ever written, 0 for an empty partition.
func (p *partition) currentOffset() uint64 {
	if !p.written {
		return 0
	}
	return p.last
}

// appendFrames stores one send batch of 0.8-shaped frames (header, payload, user
// headers; origin time and id set, zero ids replaced when randomID is set): it
// assigns offsets, one batch timestamp and checksums. frames must be owned by
// the partition.
func (p *partition) appendFrames(frames [][]byte, now uint64, randomID func([]byte)) (first uint64) {
	// Server timestamps must be monotonic per partition even if the clock steps back.
	if now <= p.lastStamp {
		now = p.lastStamp + 1
	}
	p.lastStamp = now
	first = p.next
	origin := uint64(math.MaxUint64)
	for _, f := range frames {
		origin = min(origin, binary.LittleEndian.Uint64(f[40:48]))
	}
	for _, f := range frames {
		if randomID != nil && isZero(f[8:24]) {
			randomID(f[8:24])
		}
		binary.LittleEndian.PutUint64(f[24:32], p.next)
		binary.LittleEndian.PutUint64(f[32:40], now)
		binary.LittleEndian.PutUint64(f[0:8], xxh3.Hash(f[8:]))
		m := message{offset: p.next, stamp: now, origin: binary.LittleEndian.Uint64(f[40:48]), batchBase: first, batchOrigin: origin, raw: f}
		copy(m.id[:], f[8:24])
		p.msgs = append(p.msgs, m)
		p.sizeBytes += uint64(len(f))
		p.last = p.next
		p.next++
	}
	p.written = p.written || len(frames) > 0
	return first
}

// indexOf is the index of the first message with offset >= off.
func (p *partition) indexOf(off uint64) int {
	if n := len(p.msgs); n > 0 && off >= p.msgs[0].offset {
		// Fast path: no hole between the first message and off.
		if i := off - p.msgs[0].offset; i < uint64(n) && p.msgs[i].offset == off {
			return int(i)
		}
	}
	return sort.Search(len(p.msgs), func(i int) bool { return p.msgs[i].offset >= off })
}

// deleteBelow drops messages with offset < off, like segment retention would.
func (p *partition) deleteBelow(off uint64) {
	n := p.indexOf(off)
	if n == 0 {
		return
	}
	for i := range p.msgs[:n] {
		p.sizeBytes -= uint64(len(p.msgs[i].raw))
	}
	p.msgs = append([]message(nil), p.msgs[n:]...)
}

// startIndex returns the index of the first message a poll with this strategy
// reads, ok=false when the poll returns nothing.
func (p *partition) startIndex(kind uint8, value uint64, count uint32, stored uint64, hasStored bool) (int, bool) {
	if len(p.msgs) == 0 {
		return 0, false
	}
	var start uint64
	switch kind {
	case strategyOffset:
		start = value
	case strategyTimestamp:
		i := sort.Search(len(p.msgs), func(i int) bool { return p.msgs[i].stamp >= value })
		return i, i < len(p.msgs)
	case strategyFirst:
		return 0, true
	case strategyLast:
		n := min(int(min(count, math.MaxInt32)), len(p.msgs))
		return len(p.msgs) - n, n > 0
	case strategyNext:
		if !hasStored {
			return 0, true
		}
		start = stored + 1
	}
	if start > p.last {
		return 0, false
	}
	i := p.indexOf(start)
	return i, i < len(p.msgs)
}

// window returns up to count messages from index i.
func (p *partition) window(i int, count uint32) []message {
	j := len(p.msgs)
	if uint64(count) < uint64(j-i) {
		j = i + int(count)
	}
	return p.msgs[i:j]
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Polling strategy kinds.
const (
	strategyOffset    = 1
	strategyTimestamp = 2
	strategyFirst     = 3
	strategyLast      = 4
	strategyNext      = 5
)

func (t *topic) totals() (size, count uint64) {
	for _, p := range t.partitions {
		size += p.sizeBytes
		count += uint64(len(p.msgs))
	}
	return size, count
}

func (s *stream) totals() (size, count uint64, topics uint32) {
	for _, t := range s.topics {
		if t == nil {
			continue
		}
		ts, tc := t.totals()
		size += ts
		count += tc
		topics++
	}
	return size, count, topics
}

func appendStreamHeader(b []byte, s *stream) []byte {
	size, count, topics := s.totals()
	b = appendU32(b, s.id)
	b = appendU64(b, s.createdAt)
	b = appendU32(b, topics)
	b = appendU64(b, size)
	b = appendU64(b, count)
	return appendName(b, s.name)
}

func appendTopicHeader(b []byte, t *topic) []byte {
	size, count := t.totals()
	b = appendU32(b, t.id)
	b = appendU64(b, t.createdAt)
	b = appendU32(b, uint32(len(t.partitions)))
	b = appendU64(b, t.expiry)
	b = append(b, t.compression)
	b = appendU64(b, t.maxSize)
	b = append(b, t.replication)
	b = appendU64(b, size)
	b = appendU64(b, count)
	return appendName(b, t.name)
}

func appendPartition(b []byte, p *partition) []byte {
	b = appendU32(b, p.id)
	b = appendU64(b, p.createdAt)
	b = appendU32(b, 1) // one in-memory segment
	b = appendU64(b, p.currentOffset())
	b = appendU64(b, p.sizeBytes)
	return appendU64(b, uint64(len(p.msgs)))
}

func appendGroup(b []byte, g *group, partitions int, withMembers bool) []byte {
	b = appendU32(b, g.id)
	b = appendU32(b, uint32(partitions))
	b = appendU32(b, uint32(len(g.members)))
	b = appendName(b, g.name)
	if !withMembers {
		return b
	}
	for _, m := range g.members {
		b = appendU32(b, m.id)
		b = appendU32(b, uint32(len(m.partitions)))
		for _, p := range m.partitions {
			b = appendU32(b, p)
		}
	}
	return b
}

func micros(t time.Time) uint64 { return uint64(t.UnixMicro()) }

// lookupStream finds a live stream by numeric id or name.
func (b *Broker) lookupStream(id ident) *stream {
	if id.numeric {
		if int(id.id) < len(b.streams) {
			return b.streams[id.id]
		}
		return nil
	}
	for _, s := range b.streams {
		if s != nil && s.name == id.name {
			return s
		}
	}
	return nil
}

func (s *stream) lookupTopic(id ident) *topic {
	if id.numeric {
		if int(id.id) < len(s.topics) {
			return s.topics[id.id]
		}
		return nil
	}
	for _, t := range s.topics {
		if t != nil && t.name == id.name {
			return t
		}
	}
	return nil
}

func (t *topic) lookupGroup(id ident) *group {
	if id.numeric {
		if int(id.id) < len(t.groups) {
			return t.groups[id.id]
		}
		return nil
	}
	for _, g := range t.groups {
		if g != nil && g.name == id.name {
			return g
		}
	}
	return nil
}

// resolveTopic maps missing stream/topic to 1009/2010 as 0.8 does for both id kinds.
func (b *Broker) resolveTopic(sid, tid ident) (*stream, *topic, *StatusError) {
	s := b.lookupStream(sid)
	if s == nil {
		return nil, nil, fail(StatusStreamNotFound, "stream %s not found", sid)
	}
	t := s.lookupTopic(tid)
	if t == nil {
		return s, nil, fail(StatusTopicNotFound, "topic %s not found in stream %s", tid, sid)
	}
	return s, t, nil
}

// freeSlot returns the lowest nil index, or len: ids are slab indices in 0.8.
func freeSlot[T any](xs []*T) int {
	for i, x := range xs {
		if x == nil {
			return i
		}
	}
	return len(xs)
}

func putSlot[T any](xs []*T, i int, x *T) []*T {
	if i == len(xs) {
		return append(xs, x)
	}
	xs[i] = x
	return xs
}

// murmur3 is murmur3_x86_32, which 0.8 uses to map a messages key to a partition.
func murmur3(data []byte, seed uint32) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := seed
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := binary.LittleEndian.Uint32(data[i*4:])
		k *= c1
		k = k<<15 | k>>17
		k *= c2
		h ^= k
		h = h<<13 | h>>19
		h = h*5 + 0xe6546b64
	}
	tail := data[n*4:]
	var k uint32
	switch len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		k *= c1
		k = k<<15 | k>>17
		k *= c2
		h ^= k
	}
	h ^= uint32(len(data))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

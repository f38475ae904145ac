package iggytest

import (
	"encoding/binary"
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
	partitions   []*partition
	groups       []*group
	balancedNext uint32
}

type partition struct {
	id          uint32
	createdAt   uint64
	frames      [][]byte // wire frames: header, payload, user headers
	stamps      []uint64 // server timestamp of frames[i]
	firstOffset uint64   // offset of frames[0]
	nextOffset  uint64   // offset the next message gets; 0 = never written
	lastStamp   uint64
	sizeBytes   uint64
	consumers   map[string]uint64 // single-consumer offsets by identifier key
	groups      map[uint32]uint64 // group offsets by group id
}

func (p *partition) written() bool { return p.nextOffset > 0 }

// currentOffset is the highest offset ever written, 0 for an empty partition.
func (p *partition) currentOffset() uint64 {
	if p.nextOffset == 0 {
		return 0
	}
	return p.nextOffset - 1
}

// appendFrames assigns offsets, one batch timestamp, ids and checksums to frames
// already validated by splitFrames; frames must be owned by the partition.
func (p *partition) appendFrames(frames [][]byte, now uint64, randomID func([]byte)) (first uint64) {
	// Server timestamps must be monotonic per partition even if the clock steps back.
	if now <= p.lastStamp {
		now = p.lastStamp + 1
	}
	p.lastStamp = now
	first = p.nextOffset
	if len(p.frames) == 0 {
		p.firstOffset = p.nextOffset
	}
	for _, f := range frames {
		if isZero(f[8:24]) {
			randomID(f[8:24])
		}
		binary.LittleEndian.PutUint64(f[24:32], p.nextOffset)
		binary.LittleEndian.PutUint64(f[32:40], now)
		binary.LittleEndian.PutUint64(f[0:8], xxh3.Hash(f[8:]))
		p.frames = append(p.frames, f)
		p.stamps = append(p.stamps, now)
		p.sizeBytes += uint64(len(f))
		p.nextOffset++
	}
	return first
}

// deleteBelow drops messages with offset < off, like segment retention would.
func (p *partition) deleteBelow(off uint64) {
	if len(p.frames) == 0 || off <= p.firstOffset {
		return
	}
	n := off - p.firstOffset
	if n > uint64(len(p.frames)) {
		n = uint64(len(p.frames))
	}
	for _, f := range p.frames[:n] {
		p.sizeBytes -= uint64(len(f))
	}
	p.frames = append([][]byte(nil), p.frames[n:]...)
	p.stamps = append([]uint64(nil), p.stamps[n:]...)
	p.firstOffset += n
}

// startFor returns the first offset a poll with this strategy reads, ok=false when
// the poll returns nothing.
func (p *partition) startFor(kind uint8, value uint64, count uint32, stored uint64, hasStored bool) (uint64, bool) {
	if len(p.frames) == 0 {
		return 0, false
	}
	cur := p.currentOffset()
	var start uint64
	switch kind {
	case strategyOffset:
		start = value
	case strategyTimestamp:
		i := sort.Search(len(p.stamps), func(i int) bool { return p.stamps[i] >= value })
		if i == len(p.stamps) {
			return 0, false
		}
		start = p.firstOffset + uint64(i)
	case strategyFirst:
		start = p.firstOffset
	case strategyLast:
		n := uint64(count)
		if n > cur+1 {
			n = cur + 1
		}
		start = cur + 1 - n
	case strategyNext:
		if hasStored {
			start = stored + 1
		} else {
			start = p.firstOffset
		}
	}
	if start > cur {
		return 0, false
	}
	if start < p.firstOffset {
		start = p.firstOffset
	}
	return start, true
}

// window returns frames [start, start+count) that exist.
func (p *partition) window(start uint64, count uint32) [][]byte {
	i := start - p.firstOffset
	j := i + uint64(count)
	if j > uint64(len(p.frames)) {
		j = uint64(len(p.frames))
	}
	return p.frames[i:j]
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
		count += uint64(len(p.frames))
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
	return appendU64(b, uint64(len(p.frames)))
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

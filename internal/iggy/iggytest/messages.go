package iggytest

import (
	"encoding/binary"
	"slices"
	"time"
)

// Partitioning kinds of SendMessages.
const (
	partitioningBalanced  = 1
	partitioningPartition = 2
	partitioningKey       = 3
)

type pollReq struct {
	consumer     consumerRef
	stream       ident
	topic        ident
	partition    uint32
	hasPartition bool
	kind         uint8
	value        uint64
	count        uint32
	autoCommit   bool
}

func decodePoll(r *reader) request {
	q := pollReq{consumer: r.consumer(), stream: r.identifier("stream"), topic: r.identifier("topic")}
	q.partition, q.hasPartition = r.optionalPartition()
	q.kind = r.u8("polling strategy kind")
	q.value = r.u64("polling strategy value")
	q.count = r.u32("messages count")
	ac := r.u8("auto commit")
	q.autoCommit = ac == 1
	if r.err == nil && (q.kind < strategyOffset || q.kind > strategyNext) {
		r.err = fail(StatusInvalidCommand, "invalid polling strategy kind %d", q.kind)
	}
	if r.err == nil && ac > 1 {
		r.err = fail(StatusInvalidCommand, "invalid auto commit flag %d", ac)
	}
	return q
}

// appendEmptyPoll is the reply 0.8 gives a group member polling nothing it owns.
func appendEmptyPoll(out []byte) []byte {
	return append(out, make([]byte, pollHeaderSize)...)
}

func (q pollReq) exec(b *Broker, s *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil {
		return nil, err
	}
	var (
		g   *group
		pid uint32
	)
	if q.consumer.group {
		var m *member
		if g, m, err = b.groupMember(t, q.consumer.id, s); err != nil {
			return nil, err
		}
		if q.hasPartition {
			if !slices.Contains(m.partitions, q.partition) {
				return appendEmptyPoll(out), nil
			}
			pid = q.partition
		} else {
			var ok bool
			if pid, ok = g.nextPartition(m); !ok {
				return appendEmptyPoll(out), nil
			}
		}
	} else if q.hasPartition {
		pid = q.partition
	}
	if int(pid) >= len(t.partitions) {
		return nil, fail(StatusPartitionNotFound, "partition %d not found", pid)
	}
	p := t.partitions[pid]
	var stored uint64
	var hasStored bool
	if g != nil {
		stored, hasStored = p.groups[g.id]
	} else {
		stored, hasStored = p.consumers[q.consumer.id.key()]
	}
	out = appendU32(out, pid)
	out = appendU64(out, p.currentOffset())
	countAt := len(out)
	out = appendU32(out, 0)
	start, ok := p.startIndex(q.kind, q.value, q.count, stored, hasStored)
	if !ok || q.count == 0 {
		return out, nil
	}
	msgs := p.window(start, q.count)
	size := 0
	for i := range msgs {
		size += len(msgs[i].raw)
	}
	out = slices.Grow(out, size)
	for i := range msgs {
		out = append(out, msgs[i].raw...) // copies: clients never share stored bytes
	}
	binary.LittleEndian.PutUint32(out[countAt:], uint32(len(msgs)))
	if len(msgs) == 0 {
		return out, nil
	}
	last := msgs[len(msgs)-1].offset
	if g != nil {
		g.lastPolled[pid] = last
	}
	if q.autoCommit {
		rec := b.offsetRecord(Protocol08, s, fromIdent(q.stream), fromIdent(q.topic), q.consumer.group, fromIdent(q.consumer.id), pid)
		rec.Offset, rec.AutoCommit = last, true
		b.storeOffset(p, g, q.consumer.id, last)
		b.recordStoreLocked(rec)
	}
	return out, nil
}

// groupMember resolves a group and the caller's membership: 5000 / 5006 otherwise.
func (b *Broker) groupMember(t *topic, id ident, s *session) (*group, *member, *StatusError) {
	g := t.lookupGroup(id)
	if g == nil {
		return nil, nil, fail(StatusGroupNotFound, "consumer group %s not found", id)
	}
	g.expire(b.cfg.rebalanceTimeout, time.Now())
	m := g.memberOf(s)
	if m == nil {
		return g, nil, fail(StatusGroupMemberNotFound, "not a member of consumer group %s", id)
	}
	return g, m, nil
}

func (b *Broker) storeOffset(p *partition, g *group, consumer ident, off uint64) {
	if g != nil {
		p.groups[g.id] = off
		g.maybeComplete(p.id, off)
		return
	}
	p.consumers[consumer.key()] = off
}

type offsetReq struct {
	consumer     consumerRef
	stream       ident
	topic        ident
	partition    uint32
	hasPartition bool
}

type getOffsetReq struct{ offsetReq }

func (q getOffsetReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// 0.8 swallows every lookup failure here into an empty OK.
	_, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil || int(q.partition) >= len(t.partitions) {
		return out, nil
	}
	p := t.partitions[q.partition]
	var off uint64
	var ok bool
	if q.consumer.group {
		g := t.lookupGroup(q.consumer.id)
		if g == nil {
			return out, nil
		}
		off, ok = p.groups[g.id]
	} else {
		off, ok = p.consumers[q.consumer.id.key()]
	}
	if !ok {
		return out, nil
	}
	out = appendU32(out, p.id)
	out = appendU64(out, p.currentOffset())
	return appendU64(out, off), nil
}

type storeOffsetReq struct {
	offsetReq
	offset uint64
}

func (q storeOffsetReq) exec(b *Broker, s *session, out []byte) (_ []byte, err *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec := b.offsetRecord(Protocol08, s, fromIdent(q.stream), fromIdent(q.topic), q.consumer.group, fromIdent(q.consumer.id), q.partition)
	rec.Offset = q.offset
	defer func() {
		if err != nil {
			rec.Status = err.Status
		}
		b.recordStoreLocked(rec)
	}()
	return q.store(b, s, &rec, out)
}

func (q storeOffsetReq) store(b *Broker, s *session, rec *OffsetStore, out []byte) ([]byte, *StatusError) {
	_, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil {
		return nil, err
	}
	var g *group
	pid := q.partition
	if q.consumer.group {
		var m *member
		if g, m, err = b.groupMember(t, q.consumer.id, s); err != nil {
			return nil, err
		}
		if q.hasPartition {
			if !slices.Contains(m.partitions, pid) {
				return nil, fail(StatusNotResolvedConsumer, "partition %d is not owned by this member of group %s", pid, q.consumer.id)
			}
		} else {
			var ok bool
			if pid, ok = g.currentPartition(m); !ok {
				return nil, fail(StatusNotResolvedConsumer, "member of group %s owns no partition", q.consumer.id)
			}
			rec.Partition = pid
		}
	}
	if int(pid) >= len(t.partitions) {
		return nil, fail(StatusPartitionNotFound, "partition %d not found", pid)
	}
	p := t.partitions[pid]
	if !p.written || q.offset > p.currentOffset() {
		return nil, fail(StatusInvalidOffset, "offset %d is beyond partition %d's current offset %d", q.offset, pid, p.currentOffset())
	}
	b.storeOffset(p, g, q.consumer.id, q.offset)
	return out, nil
}

type sendReq struct {
	stream, topic ident
	kind          uint8
	key           []byte
	region        []byte // message frames; aliases the read buffer until exec copies it
	count         int
}

func decodeSend(p []byte) (request, *StatusError) {
	r := &reader{b: p}
	metaLen := r.u32("metadata length")
	metaStart := r.off
	q := sendReq{stream: r.identifier("stream"), topic: r.identifier("topic")}
	q.kind = r.u8("partitioning kind")
	kl := int(r.u8("partitioning length"))
	q.key = r.bytes(kl, "partitioning value")
	count := r.u32("messages count")
	if r.err != nil {
		return nil, r.err
	}
	if uint64(r.off-metaStart) != uint64(metaLen) {
		// A real 0.8.0 server then reads the indexes from the wrong place
		// and finds a non-zero offset in them.
		return nil, fail(StatusNonZeroOffset, "metadata length %d does not match the %d metadata bytes", metaLen, r.off-metaStart)
	}
	switch {
	case q.kind == partitioningBalanced && kl == 0,
		q.kind == partitioningPartition && kl == 4,
		q.kind == partitioningKey && kl > 0:
	default:
		return nil, fail(StatusInvalidCommand, "invalid partitioning kind %d with %d-byte value", q.kind, kl)
	}
	if count == 0 {
		return nil, fail(StatusInvalidMessagesCount, "messages count is 0")
	}
	r.bytes(int(count)*indexSize, "message indexes")
	if r.err != nil {
		return nil, r.err
	}
	region := p[r.off:]
	pos := 0
	for i := 0; i < int(count); i++ {
		// A real 0.8.0 server splits frames by their header lengths and
		// answers MissingIndex when they run past the data; it accepts an
		// empty payload and does not compare index end positions (the Go
		// SDK never sends either).
		if len(region)-pos < messageHeaderSize {
			return nil, fail(StatusMissingIndex, "message %d: %d bytes left, header needs %d", i, len(region)-pos, messageHeaderSize)
		}
		h := region[pos:]
		uhl := int64(binary.LittleEndian.Uint32(h[48:52]))
		pl := int64(binary.LittleEndian.Uint32(h[52:56]))
		end := int64(pos) + messageHeaderSize + pl + uhl
		if end > int64(len(region)) {
			return nil, fail(StatusMissingIndex, "message %d ends at %d beyond the %d message bytes", i, end, len(region))
		}
		pos = int(end)
	}
	if pos != len(region) {
		return nil, fail(StatusInvalidMessagesSize, "%d bytes after the last message", len(region)-pos)
	}
	q.region, q.count = region, int(count)
	return q, nil
}

func (q sendReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	// Copy outside the lock: the read buffer is reused for the next request.
	buf := make([]byte, len(q.region))
	copy(buf, q.region)
	frames := make([][]byte, 0, q.count)
	for pos := 0; pos < len(buf); {
		uhl := int(binary.LittleEndian.Uint32(buf[pos+48:]))
		pl := int(binary.LittleEndian.Uint32(buf[pos+52:]))
		end := pos + messageHeaderSize + pl + uhl
		frames = append(frames, buf[pos:end:end])
		pos = end
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	_, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil {
		return nil, err
	}
	n := uint32(len(t.partitions))
	if n == 0 {
		return nil, fail(StatusNoPartitions, "topic %s has no partitions", q.topic)
	}
	var pid uint32
	switch q.kind {
	case partitioningBalanced:
		pid = t.balancedNext % n
		t.balancedNext++
	case partitioningPartition:
		pid = binary.LittleEndian.Uint32(q.key)
		if pid >= n {
			return nil, fail(StatusPartitionNotFound, "partition %d not found (topic has %d)", pid, n)
		}
	case partitioningKey:
		pid = murmur3(q.key, 0) % n
	}
	t.partitions[pid].appendFrames(frames, micros(time.Now()), randomID)
	return out, nil
}

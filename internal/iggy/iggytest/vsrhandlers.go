package iggytest

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// exec runs one authorised VSR command with b.mu held; it appends the reply body
// to out (which holds room for the header) and returns a header status (0 = OK;
// result-framed operations carry their rejections in the result section).
func (c *vsrConn) exec(code uint32, h *vsr.RequestHeader, s *session, body, out []byte) ([]byte, uint32) {
	b := c.b
	d := c.dialect
	if s == nil {
		if code == vsr.CodeBindSession {
			return c.bindSession(h, body, out)
		}
		return out, vsr.StatusUnauthenticated
	}
	switch code {
	case vsr.CodePing:
		return out, 0
	case vsr.CodeClusterMetadata:
		return vsr.AppendCluster(out, d, b.clusterLocked()), 0
	case vsr.CodeLogout:
		b.releaseLocked(s)
		return out, 0
	case vsr.CodeGetStream:
		id, err := vsr.DecodeStreamRef(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		st := b.lookupStream(toIdent(id))
		if st == nil {
			return out, 0 // not found: an empty body
		}
		out = appendVSRStream(out, d, st)
		for _, t := range st.topics {
			if t != nil {
				out = appendVSRTopicHeader(out, d, t)
			}
		}
		return out, 0
	case vsr.CodeGetTopic:
		sid, tid, err := vsr.DecodeTopicRef(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		_, t, serr := b.resolveTopic(toIdent(sid), toIdent(tid))
		if serr != nil {
			return out, 0 // not found at any level: an empty body
		}
		return b.appendVSRTopic(out, d, t), 0
	case vsr.CodeCreateStream:
		name, opts, err := vsr.DecodeCreateStream(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		if len(opts) > 0 {
			return vsr.AppendResultError(out, vsr.StatusInvalidOption), 0 // the stream catalog is empty
		}
		st, serr := b.createStream(name)
		if serr != nil {
			return vsr.AppendResultError(out, serr.Status), 0
		}
		b.metaOp++
		return appendVSRStream(vsr.AppendResultOK(out), d, st), 0
	case vsr.CodeCreateTopic:
		return b.vsrCreateTopic(out, d, body)
	case vsr.CodeDeleteStream:
		id, err := vsr.DecodeStreamRef(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		st := b.lookupStream(toIdent(id))
		if st == nil {
			return vsr.AppendResultError(out, vsr.StatusStreamNotFound), 0
		}
		b.streams[st.id] = nil
		b.metaOp++
		return vsr.AppendResultOK(out), 0
	case vsr.CodeDeleteTopic:
		sid, tid, err := vsr.DecodeTopicRef(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		st, t, serr := b.resolveTopic(toIdent(sid), toIdent(tid))
		if serr != nil {
			return vsr.AppendResultError(out, serr.Status), 0
		}
		st.topics[t.id] = nil
		b.metaOp++
		return vsr.AppendResultOK(out), 0
	case vsr.CodeGetGroup, vsr.CodeSyncGroup:
		ref, err := vsr.DecodeGroupRef(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		_, t, serr := b.resolveTopic(toIdent(ref.Stream), toIdent(ref.Topic))
		if serr != nil {
			return out, serr.Status
		}
		g := t.lookupGroup(toIdent(ref.Group))
		if g == nil {
			if code == vsr.CodeSyncGroup {
				return out, vsr.StatusGroupNotFound
			}
			return out, 0 // a missing group: an empty body
		}
		g.expire(b.cfg.rebalanceTimeout, time.Now())
		if code == vsr.CodeGetGroup {
			return appendVSRGroup(out, g, len(t.partitions), true), 0
		}
		m := g.memberOf(s)
		if m == nil {
			return out, 0 // not a member: an empty body
		}
		return vsr.AppendAssignment(out, &vsr.Assignment{Generation: g.generation, Partitions: g.pollable(m)}), 0
	case vsr.CodeGetGroups:
		sid, tid, err := vsr.DecodeTopicRef(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		_, t, serr := b.resolveTopic(toIdent(sid), toIdent(tid))
		if serr != nil {
			return out, serr.Status
		}
		for _, g := range t.groups {
			if g != nil {
				out = appendVSRGroup(out, g, len(t.partitions), false)
			}
		}
		return out, 0
	case vsr.CodeCreateGroup:
		sid, tid, name, err := vsr.DecodeCreateGroup(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		_, t, serr := b.resolveTopic(toIdent(sid), toIdent(tid))
		if serr != nil {
			return vsr.AppendResultError(out, serr.Status), 0
		}
		if t.lookupGroup(ident{name: name}) != nil {
			return vsr.AppendResultError(out, vsr.StatusGroupNameExists), 0
		}
		id := freeSlot(t.groups)
		g := newGroup(uint32(id), name)
		t.groups = putSlot(t.groups, id, g)
		b.metaOp++
		return appendVSRGroup(vsr.AppendResultOK(out), g, len(t.partitions), true), 0
	case vsr.CodeJoinGroup, vsr.CodeLeaveGroup:
		ref, err := vsr.DecodeGroupRef(body)
		if err != nil {
			return out, vsr.StatusInvalidFormat
		}
		_, t, serr := b.resolveTopic(toIdent(ref.Stream), toIdent(ref.Topic))
		if serr != nil {
			return vsr.AppendResultError(out, serr.Status), 0
		}
		g := t.lookupGroup(toIdent(ref.Group))
		if g == nil {
			return vsr.AppendResultError(out, vsr.StatusGroupNotFound), 0
		}
		g.expire(b.cfg.rebalanceTimeout, time.Now())
		if code == vsr.CodeJoinGroup {
			g.joinEven(s, len(t.partitions), committedOf(t, g))
		} else if !g.leave(s, len(t.partitions)) {
			return vsr.AppendResultError(out, vsr.StatusGroupMemberNotFound), 0
		}
		return vsr.AppendResultOK(out), 0
	case vsr.CodePoll:
		return c.poll(h, s, body, out)
	case vsr.CodeGetOffset, vsr.CodeStoreOffset, vsr.CodeDeleteOffset:
		return c.offset(code, h, s, body, out)
	case vsr.CodeBindSession:
		if d >= vsr.V012 {
			return c.bindSession(h, body, out)
		}
	case vsr.CodePartitionRoute:
		if d >= vsr.V012 {
			sid, tid, pid, err := vsr.DecodeRouteRequest(body)
			if err != nil {
				return out, vsr.StatusInvalidFormat
			}
			_, t, serr := b.resolveTopic(toIdent(sid), toIdent(tid))
			if serr != nil {
				return out, serr.Status
			}
			if int(pid) >= len(t.partitions) {
				return out, vsr.StatusPartitionNotFound
			}
			p := t.partitions[pid]
			return vsr.AppendRoute(out, &vsr.Route{Incarnation: p.incarnation, MetadataOp: p.metaOp, View: 1,
				PartitionsCount: uint32(len(t.partitions)), PrimaryReplica: b.primaryOf(p)}), 0
		}
	}
	return out, vsr.StatusInvalidCommand
}

func toIdent(id vsr.Identifier) ident { return ident{numeric: id.Numeric, id: id.ID, name: id.Name} }

func committedOf(t *topic, g *group) func(uint32) (uint64, bool) {
	return func(p uint32) (uint64, bool) {
		off, ok := t.partitions[p].groups[g.id]
		return off, ok
	}
}

// bindSession (0.10, code 15) attaches this connection to a session logged in
// before, named by client id, session number (0: the current one) and bind secret.
func (c *vsrConn) bindSession(h *vsr.RequestHeader, body, out []byte) ([]byte, uint32) {
	bs, err := vsr.DecodeBindSession(body)
	if err != nil {
		return out, vsr.StatusInvalidFormat
	}
	s := c.b.sessions[bs.Client]
	if s == nil || bs.Client != h.Client || s.dialect < vsr.V012 || (bs.Session != 0 && bs.Session != s.number) || bs.BindSecret != s.secret ||
		!vsr.Compatible(vsr.V012, vsr.V012.Version(), vsr.V012.Version(), bs.Version) {
		return out, vsr.StatusUnauthenticated
	}
	if prev := c.sess; prev != nil && prev != s && prev.conn == c {
		c.b.releaseLocked(prev)
	}
	s.conn, c.sess, c.dialect = c, s, vsr.V012
	c.lastSeen.Store(time.Now().UnixNano())
	return vsr.AppendLoginReply(out, &vsr.LoginReply{Session: s.number, ServerVersion: vsr.V012.Version(), ServerName: serverName(vsr.V012)}), 0
}

func (b *Broker) clusterLocked() *vsr.Cluster {
	if b.cluster != nil {
		return &vsr.Cluster{Name: "iggytest", Nodes: b.cluster}
	}
	host, port := b.hostPort()
	return &vsr.Cluster{Name: "iggytest", Nodes: []vsr.Node{{ReplicaID: b.cfg.replicaID, Name: "iggy-node", IP: host, TCP: port,
		Role: vsr.RoleLeader, Status: vsr.StatusHealthy}}}
}

func (b *Broker) primaryOf(p *partition) uint8 {
	if p.primary >= 0 {
		return uint8(p.primary)
	}
	return b.cfg.replicaID
}

func appendVSRStream(out []byte, d vsr.Dialect, s *stream) []byte {
	size, count, topics := s.totals()
	return vsr.AppendStream(out, d, &vsr.Stream{ID: s.id, CreatedAt: s.createdAt, TopicsCount: topics, Size: size, MessagesCount: count, Name: s.name})
}

func appendVSRTopicHeader(out []byte, d vsr.Dialect, t *topic) []byte {
	size, count := t.totals()
	expiry := t.expiry
	if expiry == math.MaxUint64 {
		expiry = 0 // 0.9: 0 is never expire
	}
	return vsr.AppendTopicHeader(out, d, &vsr.Topic{ID: t.id, CreatedAt: t.createdAt, PartitionsCount: uint32(len(t.partitions)),
		MessageExpiry: expiry, Compression: t.compression, MaxTopicSize: t.maxSize, Size: size, MessagesCount: count,
		Name: t.name, Options: t.options})
}

func (b *Broker) appendVSRTopic(out []byte, d vsr.Dialect, t *topic) []byte {
	out = appendVSRTopicHeader(out, d, t)
	for _, p := range t.partitions {
		self := []uint8{b.primaryOf(p)}
		out = vsr.AppendPartition(out, d, &vsr.Partition{ID: p.id, CreatedAt: p.createdAt, Segments: 1, CurrentOffset: p.currentOffset(),
			Size: p.sizeBytes, MessagesCount: uint64(len(p.msgs)),
			Context: vsr.PartitionContext{Incarnation: p.incarnation, MetadataOp: p.metaOp}, Members: self, InSync: self})
	}
	return out
}

func appendVSRGroup(out []byte, g *group, partitions int, withMembers bool) []byte {
	rec := vsr.Group{ID: g.id, PartitionsCount: uint32(partitions), MembersCount: uint32(len(g.members)), Name: g.name}
	for _, m := range g.members {
		rec.Members = append(rec.Members, vsr.Member{ID: m.id, Partitions: m.partitions})
	}
	return vsr.AppendGroup(out, &rec, withMembers)
}

// Topic option keys a CreateTopic may carry (0.9 and 0.10 catalogs).
var topicOptionKeys = []string{"compression_algorithm", "message_expiry", "max_topic_size", "segment_size", "durability",
	"consumer_offset_durability", "partition_resize_policy", "messages_required_to_save", "size_of_messages_required_to_save",
	"preallocate_segments", "replication_factor"}

func (b *Broker) vsrCreateTopic(out []byte, d vsr.Dialect, body []byte) ([]byte, uint32) {
	ct, err := vsr.DecodeCreateTopic(body)
	if err != nil {
		return out, vsr.StatusInvalidFormat
	}
	compression, expiry, maxSize := uint8(1), uint64(0), uint64(0)
	for _, o := range ct.Options {
		if !slices.Contains(topicOptionKeys, o.Key) {
			return vsr.AppendResultError(out, vsr.StatusInvalidOption), 0
		}
		var ok bool
		switch o.Key {
		case "compression_algorithm":
			compression, ok = compressionOption(o)
		case "message_expiry":
			expiry, ok = sizeOption(o, true)
		case "max_topic_size":
			maxSize, ok = sizeOption(o, false)
		default:
			ok = true // accepted, not interpreted
		}
		if !ok {
			return vsr.AppendResultError(out, vsr.StatusInvalidOption), 0
		}
	}
	t, serr := b.createTopic(toIdent(ct.Stream), ct.Name, int(ct.Partitions), compression, expiry, maxSize, 0)
	if serr != nil {
		return vsr.AppendResultError(out, serr.Status), 0
	}
	if len(ct.Options) > 0 {
		t.options = vsr.AppendOptions(nil, ct.Options)
	}
	return b.appendVSRTopic(vsr.AppendResultOK(out), d, t), 0
}

// compressionOption reads "none"/"gzip" (any case) or a numeric 1/2.
func compressionOption(o vsr.Option) (uint8, bool) {
	if o.Kind == vsr.HeaderString {
		switch strings.ToLower(string(o.Value)) {
		case "none":
			return 1, true
		case "gzip":
			return 2, true
		}
		return 0, false
	}
	if v, ok := optionUint(o); ok && (v == 1 || v == 2) {
		return uint8(v), true
	}
	return 0, false
}

// sizeOption reads a number (µs for an expiry, bytes for a size), a Go duration
// (expiry), or none/unlimited/never_expire/server_default (0: the default).
func sizeOption(o vsr.Option, duration bool) (uint64, bool) {
	if o.Kind != vsr.HeaderString {
		return optionUint(o)
	}
	s := strings.ToLower(strings.TrimSpace(string(o.Value)))
	switch s {
	case "none", "unlimited", "never_expire", "server_default", "0":
		return 0, true
	}
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		return v, true
	}
	if dur, err := time.ParseDuration(s); duration && err == nil && dur > 0 {
		return uint64(dur.Microseconds()), true
	}
	return 0, false
}

// optionUint reads an unsigned value of kinds Uint8..Uint64 (9..12).
func optionUint(o vsr.Option) (uint64, bool) {
	n := map[uint8]int{9: 1, 10: 2, 11: 4, 12: 8}[o.Kind]
	if n == 0 || len(o.Value) != n {
		return 0, false
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(o.Value[i])
	}
	return v, true
}

// partitionGate applies 0.10's partition checks: the primary (89) and the
// request's incarnation (87).
func (c *vsrConn) partitionGate(h *vsr.RequestHeader, p *partition) uint32 {
	if c.dialect < vsr.V012 {
		return 0
	}
	if c.b.primaryOf(p) != c.b.cfg.replicaID {
		return vsr.StatusNotPrimary
	}
	if h.PartitionIncarnation != p.incarnation {
		return vsr.StatusHistoryUnavailable
	}
	return 0
}

// emptyPoll appends the prefix of a poll reply with no messages and a zero context.
func emptyPoll(out []byte, d vsr.Dialect, partition uint32) []byte {
	return vsr.AppendPollPrefix(out, d, &vsr.PollReply{PartitionID: partition})
}

func (c *vsrConn) poll(h *vsr.RequestHeader, s *session, body, out []byte) ([]byte, uint32) {
	b, d := c.b, c.dialect
	q, err := vsr.DecodePoll(body)
	if err != nil {
		return out, vsr.StatusInvalidFormat
	}
	_, t, serr := b.resolveTopic(toIdent(q.Stream), toIdent(q.Topic))
	if serr != nil {
		return out, serr.Status
	}
	var g *group
	pid := q.Partition.ID
	if q.Consumer.Kind == vsr.ConsumerGroup {
		if g = t.lookupGroup(toIdent(q.Consumer.ID)); g == nil {
			return out, vsr.StatusGroupNotFound
		}
		if !q.Partition.Set {
			// 0.9 does not resolve a group poll without a partition: it
			// answers an empty poll of partition 0.
			return emptyPoll(out, d, 0), 0
		}
	} else if !q.Partition.Set {
		pid = 0
	}
	if int(pid) >= len(t.partitions) {
		return out, vsr.StatusPartitionNotFound
	}
	p := t.partitions[pid]
	if st := c.partitionGate(h, p); st != 0 {
		return out, st
	}
	ctx := vsr.PartitionContext{Incarnation: p.incarnation, MetadataOp: p.metaOp}
	var stored uint64
	var hasStored bool
	if g != nil {
		g.expire(b.cfg.rebalanceTimeout, time.Now())
		m := g.memberOf(s)
		if m == nil || !m.owns(pid) || g.revoking(m, pid) || (d >= vsr.V012 && h.OwnerGeneration != 0 && h.OwnerGeneration != g.ownerGen[pid]) {
			return emptyPoll(out, d, vsr.ResyncPartition), 0 // fenced: Sync again
		}
		ctx.OwnerGeneration = g.ownerGen[pid]
		stored, hasStored = p.groups[g.id]
	} else {
		if d >= vsr.V012 && h.OwnerGeneration != 0 {
			return out, vsr.StatusPartitionNotOwned
		}
		stored, hasStored = p.consumers[toIdent(q.Consumer.ID).key()]
	}
	prefix := len(out)
	out = vsr.AppendPollPrefix(out, d, &vsr.PollReply{PartitionID: pid, CurrentOffset: p.currentOffset(), Context: ctx})
	start, ok := p.startIndex(q.Strategy.Kind, q.Strategy.Value, q.Count, stored, hasStored)
	if !ok || q.Count == 0 {
		return out, 0
	}
	msgs := p.window(start, q.Count)
	out = appendVSRRecords(out, pid, msgs)
	putU32(out[prefix+12:], uint32(len(msgs)))
	last := msgs[len(msgs)-1].offset
	if g != nil {
		if prev, ok := g.lastPolled[pid]; !ok || last > prev {
			g.lastPolled[pid] = last // the highest offset served, as 0.9 records it
		}
	}
	if q.AutoCommit {
		rec := b.offsetRecord(c.protocol(), s, q.Stream, q.Topic, q.Consumer.Kind == vsr.ConsumerGroup, q.Consumer.ID, pid)
		rec.Offset, rec.AutoCommit = last, true
		b.storeOffset(p, g, toIdent(q.Consumer.ID), last)
		b.recordStoreLocked(rec)
	}
	return out, 0
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// appendVSRRecords renders msgs as batch records: one per stored send batch (or
// the part of it served), with that batch's base offset, server time and origin
// time, and offset_delta = offset - base offset.
func appendVSRRecords(out []byte, pid uint32, msgs []message) []byte {
	size := 0
	for i := range msgs {
		size += len(msgs[i].raw)
	}
	out = slices.Grow(out, size+vsr.BatchHeaderSize)
	for i := 0; i < len(msgs); {
		first := &msgs[i]
		at := len(out)
		out = vsr.BeginBatch(out, vsr.BatchHeader{PartitionID: uint64(pid), BaseOffset: first.batchBase,
			BaseTimestamp: first.stamp, OriginTimestamp: first.batchOrigin})
		for ; i < len(msgs) && msgs[i].batchBase == first.batchBase; i++ {
			m := &msgs[i]
			out = vsr.AppendFrame(out, m.id, uint32(m.offset-m.batchBase), uint32(min(m.origin-m.batchOrigin, math.MaxUint32)), m.payload(), m.headers())
		}
		vsr.SealBatch(out[at:])
	}
	return out
}

// offset serves GetConsumerOffset, StoreConsumerOffset and DeleteConsumerOffset.
func (c *vsrConn) offset(code uint32, h *vsr.RequestHeader, s *session, body, out []byte) ([]byte, uint32) {
	b := c.b
	q, err := vsr.DecodeOffset(body, code)
	if err != nil {
		return out, vsr.StatusInvalidFormat
	}
	isGroup := q.Consumer.Kind == vsr.ConsumerGroup
	rec := b.offsetRecord(c.protocol(), s, q.Stream, q.Topic, isGroup, q.Consumer.ID, q.Partition.ID)
	rec.Offset, rec.Delete = q.Offset, code == vsr.CodeDeleteOffset
	status := c.offsetLocked(code, h, s, &q, &out)
	if code != vsr.CodeGetOffset {
		rec.Status = status
		b.recordStoreLocked(rec)
		if status == 0 {
			out = vsr.AppendResultOK(out)
		}
	}
	return out, status
}

func (c *vsrConn) offsetLocked(code uint32, h *vsr.RequestHeader, s *session, q *vsr.Offset, out *[]byte) uint32 {
	b, d := c.b, c.dialect
	_, t, serr := b.resolveTopic(toIdent(q.Stream), toIdent(q.Topic))
	if serr != nil {
		return serr.Status
	}
	var g *group
	pid := q.Partition.ID
	if q.Consumer.Kind == vsr.ConsumerGroup {
		g = t.lookupGroup(toIdent(q.Consumer.ID))
		if g == nil {
			if code == vsr.CodeGetOffset {
				return 0 // nothing stored
			}
			return vsr.StatusGroupNotFound
		}
		if !q.Partition.Set && code != vsr.CodeGetOffset {
			return vsr.StatusInvalidIdentifier // group offset writes need a partition
		}
	}
	if !q.Partition.Set {
		pid = 0
	}
	if int(pid) >= len(t.partitions) {
		return vsr.StatusPartitionNotFound
	}
	p := t.partitions[pid]
	if code == vsr.CodeGetOffset {
		if d >= vsr.V012 && b.primaryOf(p) != b.cfg.replicaID {
			return vsr.StatusNotPrimary
		}
		var off uint64
		var ok bool
		if g != nil {
			off, ok = p.groups[g.id]
		} else {
			off, ok = p.consumers[toIdent(q.Consumer.ID).key()]
		}
		if ok {
			*out = vsr.AppendStoredOffset(*out, &vsr.StoredOffset{Partition: pid, CurrentOffset: p.currentOffset(), Stored: off})
		}
		return 0
	}
	if st := c.partitionGate(h, p); st != 0 {
		return st
	}
	if g != nil {
		g.expire(b.cfg.rebalanceTimeout, time.Now())
		m := g.memberOf(s)
		if m == nil || !m.owns(pid) || (d >= vsr.V012 && h.OwnerGeneration != 0 && h.OwnerGeneration != g.ownerGen[pid]) {
			return vsr.StatusPartitionNotOwned // pending revocation still owns: the hand-over can finish
		}
	} else if d >= vsr.V012 && h.OwnerGeneration != 0 {
		return vsr.StatusPartitionNotOwned
	}
	if code == vsr.CodeDeleteOffset {
		if g != nil {
			if _, ok := p.groups[g.id]; !ok {
				return vsr.StatusOffsetNotFound
			}
			delete(p.groups, g.id)
		} else {
			key := toIdent(q.Consumer.ID).key()
			if _, ok := p.consumers[key]; !ok {
				return vsr.StatusOffsetNotFound
			}
			delete(p.consumers, key)
		}
		return 0
	}
	if !p.written || q.Offset > p.currentOffset() {
		return vsr.StatusInvalidOffset
	}
	b.storeOffset(p, g, toIdent(q.Consumer.ID), q.Offset)
	return 0
}

// vsrSend is a decoded SendMessages with its frames laid out for storage.
type vsrSend struct {
	stream, topic vsr.Identifier
	kind          uint8
	key           []byte
	frames        [][]byte
}

// decodeVSRSend checks a SendMessages body and copies its messages into 0.8-shaped
// frames (the storage form), outside the broker's lock.
func decodeVSRSend(body []byte, d vsr.Dialect) (*vsrSend, uint32) {
	sd, err := vsr.DecodeSend(body, d)
	if err != nil {
		return nil, vsr.StatusInvalidFormat
	}
	origin := le64(sd.Batch[24:])
	q := &vsrSend{stream: sd.Stream, topic: sd.Topic, kind: sd.Partitioning, key: bytes.Clone(sd.Key)}
	err = vsr.BatchFrames(sd.Batch, func(f *vsr.Frame) error {
		q.frames = append(q.frames, buildFrame(f.Payload, f.Headers, f.ID, origin+uint64(f.TimestampDelta)))
		return nil
	})
	if err != nil {
		return nil, vsr.StatusInvalidFormat
	}
	return q, 0
}

func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

func (c *vsrConn) execSend(h *vsr.RequestHeader, _ *session, q *vsrSend, out []byte) ([]byte, uint32) {
	b := c.b
	st, t, serr := b.resolveTopic(toIdent(q.stream), toIdent(q.topic))
	if serr != nil {
		return out, serr.Status
	}
	n := uint32(len(t.partitions))
	if n == 0 {
		return out, StatusNoPartitions
	}
	var pid uint32
	switch q.kind {
	case partitioningBalanced:
		pid = t.balancedNext % n
		t.balancedNext++
	case partitioningPartition:
		pid = le32(q.key)
	case partitioningKey:
		pid = murmur3(q.key, 0) % n
	}
	if pid >= n {
		return out, vsr.StatusPartitionNotFound
	}
	p := t.partitions[pid]
	if s := c.partitionGate(h, p); s != 0 {
		return out, s
	}
	base := p.appendFrames(q.frames, micros(time.Now()), nil)
	return vsr.AppendConfirmations(out, []vsr.Confirmation{{StreamID: st.id, TopicID: t.id, PartitionID: pid, BaseOffset: base}}), 0
}

// protocol names the connection's server release for records.
func (c *vsrConn) protocol() string {
	if c.dialect >= vsr.V012 {
		return Protocol010
	}
	return Protocol09
}

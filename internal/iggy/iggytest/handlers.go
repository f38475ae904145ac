package iggytest

import (
	"encoding/binary"
	"math"
	"time"
)

// request is a decoded, length-checked command; exec appends its OK payload to out.
type request interface {
	exec(b *Broker, s *session, out []byte) ([]byte, *StatusError)
}

// needsAuth is false only for the commands 0.8.0 serves before login.
func needsAuth(code uint32) bool {
	return code != CodePing && code != CodeLoginUser && code != CodeLoginWithToken
}

// decodeRequest parses one request payload. It never panics: every field is
// bounds-checked and trailing bytes are rejected.
func decodeRequest(code uint32, p []byte) (request, *StatusError) {
	r := &reader{b: p}
	var req request
	switch code {
	case CodePing:
		// A real 0.8.0 server ignores whatever a ping carries.
		r.off = len(p)
		req = pingReq{}
	case CodeGetClusterMetadata:
		req = metadataReq{}
	case CodeLoginUser:
		req = decodeLogin(r)
	case CodeLoginWithToken:
		n := int(r.u8("token length"))
		req = loginTokenReq{token: string(r.bytes(n, "token"))}
	case CodeGetStream:
		req = getStreamReq{stream: r.identifier("stream")}
	case CodeGetStreams:
		req = getStreamsReq{}
	case CodeCreateStream:
		req = createStreamReq{name: r.name("stream name", StatusInvalidFormat)}
	case CodeDeleteStream:
		req = deleteStreamReq{stream: r.identifier("stream")}
	case CodeGetTopic:
		req = getTopicReq{stream: r.identifier("stream"), topic: r.identifier("topic")}
	case CodeGetTopics:
		req = getTopicsReq{stream: r.identifier("stream")}
	case CodeCreateTopic:
		req = decodeCreateTopic(r)
	case CodeDeleteTopic:
		req = deleteTopicReq{stream: r.identifier("stream"), topic: r.identifier("topic")}
	case CodeGetConsumerGroup, CodeJoinConsumerGroup, CodeLeaveConsumerGroup, CodeDeleteConsumerGroup:
		req = groupReq{code: code, stream: r.identifier("stream"), topic: r.identifier("topic"), group: r.identifier("group")}
	case CodeGetConsumerGroups:
		req = getGroupsReq{stream: r.identifier("stream"), topic: r.identifier("topic")}
	case CodeCreateConsumerGroup:
		req = createGroupReq{stream: r.identifier("stream"), topic: r.identifier("topic"), name: r.name("group name", StatusInvalidGroupName)}
	case CodePollMessages:
		req = decodePoll(r)
	case CodeSendMessages:
		return decodeSend(p)
	case CodeGetConsumerOffset:
		q := offsetReq{consumer: r.consumer(), stream: r.identifier("stream"), topic: r.identifier("topic")}
		q.partition, q.hasPartition = r.optionalPartition()
		req = getOffsetReq{q}
	case CodeStoreConsumerOffset:
		q := offsetReq{consumer: r.consumer(), stream: r.identifier("stream"), topic: r.identifier("topic")}
		q.partition, q.hasPartition = r.optionalPartition()
		req = storeOffsetReq{offsetReq: q, offset: r.u64("offset")}
	default:
		return nil, fail(StatusInvalidCommand, "unknown command code %d", code)
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return req, nil
}

type pingReq struct{}

func (pingReq) exec(_ *Broker, _ *session, out []byte) ([]byte, *StatusError) { return out, nil }

type metadataReq struct{}

func (metadataReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	host, port := b.hostPort()
	out = appendU32(out, uint32(len("single-node")))
	out = append(out, "single-node"...)
	out = appendU32(out, 1)
	out = appendU32(out, uint32(len("iggy-node")))
	out = append(out, "iggy-node"...)
	out = appendU32(out, uint32(len(host)))
	out = append(out, host...)
	out = binary.LittleEndian.AppendUint16(out, port) // tcp
	out = binary.LittleEndian.AppendUint16(out, 0)    // quic: disabled
	out = binary.LittleEndian.AppendUint16(out, 0)    // http: disabled
	out = binary.LittleEndian.AppendUint16(out, 0)    // websocket: disabled
	return append(out, 0 /* leader */, 0 /* healthy */), nil
}

type loginReq struct{ username, password string }

func decodeLogin(r *reader) request {
	un := int(r.u8("username length"))
	u := r.bytes(un, "username")
	pn := int(r.u8("password length"))
	p := r.bytes(pn, "password")
	vn := r.u32("version length")
	r.bytes(int(min(vn, math.MaxInt32)), "version")
	cn := r.u32("context length")
	r.bytes(int(min(cn, math.MaxInt32)), "context")
	if r.err != nil {
		return nil
	}
	switch {
	case un < 3 || un > 50:
		r.err = fail(StatusInvalidUsername, "username must be 3..50 bytes, got %d", un)
	case pn < 3 || pn > 100:
		r.err = fail(StatusInvalidPassword, "password must be 3..100 bytes, got %d", pn)
	}
	return loginReq{username: string(u), password: string(p)}
}

func (q loginReq) exec(b *Broker, s *session, out []byte) ([]byte, *StatusError) {
	pw, ok := b.cfg.users[q.username]
	if !ok || pw != q.password {
		return nil, fail(StatusInvalidCredentials, "invalid credentials for user %q", q.username)
	}
	s.authed = true
	return appendU32(out, 0), nil
}

type loginTokenReq struct{ token string }

func (q loginTokenReq) exec(b *Broker, s *session, out []byte) ([]byte, *StatusError) {
	if q.token == "" || !b.cfg.tokens[q.token] {
		// 0.8.0 answers an unknown token with ResourceNotFound, not 53.
		return nil, fail(StatusResourceNotFound, "personal access token not found")
	}
	s.authed = true
	return appendU32(out, 0), nil
}

type getStreamReq struct{ stream ident }

func (q getStreamReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookupStream(q.stream)
	if s == nil {
		return out, nil // 0.8: not found is an empty OK
	}
	out = appendStreamHeader(out, s)
	for _, t := range s.topics {
		if t != nil {
			out = appendTopicHeader(out, t)
		}
	}
	return out, nil
}

type getStreamsReq struct{}

func (getStreamsReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.streams {
		if s != nil {
			out = appendStreamHeader(out, s)
		}
	}
	return out, nil
}

type createStreamReq struct{ name string }

func (q createStreamReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.createStream(q.name)
	if err != nil {
		return nil, err
	}
	return appendStreamHeader(out, s), nil
}

type deleteStreamReq struct{ stream ident }

func (q deleteStreamReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookupStream(q.stream)
	if s == nil {
		return nil, fail(StatusStreamNotFound, "stream %s not found", q.stream)
	}
	b.streams[s.id] = nil
	return out, nil
}

type getTopicReq struct{ stream, topic ident }

func (q getTopicReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil {
		return out, nil // 0.8: not found at any level is an empty OK
	}
	return appendTopicWithPartitions(out, t), nil
}

func appendTopicWithPartitions(out []byte, t *topic) []byte {
	out = appendTopicHeader(out, t)
	for _, p := range t.partitions {
		out = appendPartition(out, p)
	}
	return out
}

type getTopicsReq struct{ stream ident }

func (q getTopicsReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookupStream(q.stream)
	if s == nil {
		return nil, fail(StatusStreamNotFound, "stream %s not found", q.stream)
	}
	for _, t := range s.topics {
		if t != nil {
			out = appendTopicHeader(out, t)
		}
	}
	return out, nil
}

type createTopicReq struct {
	stream      ident
	partitions  uint32
	compression uint8
	expiry      uint64
	maxSize     uint64
	replication uint8
	name        string
}

func decodeCreateTopic(r *reader) request {
	q := createTopicReq{stream: r.identifier("stream")}
	q.partitions = r.u32("partitions count")
	q.compression = r.u8("compression")
	q.expiry = r.u64("message expiry")
	q.maxSize = r.u64("max topic size")
	q.replication = r.u8("replication factor")
	q.name = r.name("topic name", StatusInvalidTopicName)
	if r.err == nil {
		switch {
		case q.compression != 1 && q.compression != 2:
			r.err = fail(StatusInvalidCommand, "compression must be 1 (none) or 2 (gzip), got %d", q.compression)
		case q.partitions > maxPartitions:
			r.err = fail(StatusTooManyPartitions, "%d partitions exceed %d", q.partitions, maxPartitions)
		}
	}
	return q
}

func (q createTopicReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.createTopic(q.stream, q.name, int(q.partitions), q.compression, q.expiry, q.maxSize, q.replication)
	if err != nil {
		return nil, err
	}
	return appendTopicWithPartitions(out, t), nil
}

type deleteTopicReq struct{ stream, topic ident }

func (q deleteTopicReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil {
		return nil, err
	}
	s.topics[t.id] = nil
	return out, nil
}

type groupReq struct {
	code                 uint32
	stream, topic, group ident
}

func (q groupReq) exec(b *Broker, s *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, t, err := b.resolveTopic(q.stream, q.topic)
	var g *group
	if err == nil {
		if g = t.lookupGroup(q.group); g == nil {
			err = fail(StatusGroupNotFound, "consumer group %s not found", q.group)
		}
	}
	if err != nil {
		if q.code == CodeGetConsumerGroup {
			return out, nil // 0.8: not found at any level is an empty OK
		}
		return nil, err
	}
	g.expire(b.cfg.rebalanceTimeout, time.Now())
	switch q.code {
	case CodeGetConsumerGroup:
		return appendGroup(out, g, len(t.partitions), true), nil
	case CodeJoinConsumerGroup:
		g.join(s, len(t.partitions), func(p uint32) (uint64, bool) {
			off, ok := t.partitions[p].groups[g.id]
			return off, ok
		})
	case CodeLeaveConsumerGroup:
		if !g.leave(s, len(t.partitions)) {
			return nil, fail(StatusGroupMemberNotFound, "not a member of consumer group %s", q.group)
		}
	case CodeDeleteConsumerGroup:
		t.groups[g.id] = nil
		for _, p := range t.partitions {
			delete(p.groups, g.id)
		}
	}
	return out, nil
}

type getGroupsReq struct{ stream, topic ident }

func (q getGroupsReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil {
		return nil, err
	}
	for _, g := range t.groups {
		if g != nil {
			out = appendGroup(out, g, len(t.partitions), false)
		}
	}
	return out, nil
}

type createGroupReq struct {
	stream, topic ident
	name          string
}

func (q createGroupReq) exec(b *Broker, _ *session, out []byte) ([]byte, *StatusError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, t, err := b.resolveTopic(q.stream, q.topic)
	if err != nil {
		return nil, err
	}
	if t.lookupGroup(ident{name: q.name}) != nil {
		return nil, fail(StatusGroupNameExists, "consumer group %q already exists", q.name)
	}
	id := freeSlot(t.groups)
	g := newGroup(uint32(id), q.name)
	t.groups = putSlot(t.groups, id, g)
	return appendGroup(out, g, len(t.partitions), false), nil
}

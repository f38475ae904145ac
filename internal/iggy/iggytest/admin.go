package iggytest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"
)

// ErrNotFound is wrapped by the seeding helpers when a stream, topic, group or
// partition does not exist.
var ErrNotFound = errors.New("iggytest: not found")

func (b *Broker) createStream(name string) (*stream, *StatusError) {
	if name == "" || len(name) > 255 {
		return nil, fail(StatusInvalidStreamName, "stream name must be 1..255 bytes")
	}
	if b.lookupStream(ident{name: name}) != nil {
		return nil, fail(StatusStreamNameExists, "stream %q already exists", name)
	}
	id := freeSlot(b.streams)
	s := &stream{id: uint32(id), name: name, createdAt: micros(time.Now())}
	b.streams = putSlot(b.streams, id, s)
	return s, nil
}

func (b *Broker) createTopic(sid ident, name string, partitions int, compression uint8, expiry, maxSize uint64, replication uint8) (*topic, *StatusError) {
	if name == "" || len(name) > 255 {
		return nil, fail(StatusInvalidTopicName, "topic name must be 1..255 bytes")
	}
	if partitions < 0 || partitions > maxPartitions {
		return nil, fail(StatusTooManyPartitions, "%d partitions is outside 0..%d", partitions, maxPartitions)
	}
	s := b.lookupStream(sid)
	if s == nil {
		return nil, fail(StatusStreamNotFound, "stream %s not found", sid)
	}
	if s.lookupTopic(ident{name: name}) != nil {
		return nil, fail(StatusTopicNameExists, "topic %q already exists in stream %s", name, sid)
	}
	// 0 means "server default": never expire, unlimited size, one replica.
	if expiry == 0 {
		expiry = math.MaxUint64
	}
	if maxSize == 0 {
		maxSize = math.MaxUint64
	}
	if replication == 0 {
		replication = 1
	}
	now := micros(time.Now())
	id := freeSlot(s.topics)
	t := &topic{id: uint32(id), name: name, createdAt: now, compression: compression, expiry: expiry, maxSize: maxSize, replication: replication}
	b.metaOp++
	for p := 0; p < partitions; p++ {
		b.incarnations++
		t.partitions = append(t.partitions, newPartition(uint32(p), now, b.incarnations, b.metaOp))
	}
	s.topics = putSlot(s.topics, id, t)
	return t, nil
}

// CreateStream creates a stream directly (no wire) and returns its id.
func (b *Broker) CreateStream(name string) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, err := b.createStream(name)
	if err != nil {
		return 0, fmt.Errorf("iggytest: create stream %q: %w", name, err)
	}
	return s.id, nil
}

// CreateTopic creates a topic with compression none and server-default limits.
func (b *Broker) CreateTopic(stream, topicName string, partitions int) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.createTopic(ident{name: stream}, topicName, partitions, 1, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("iggytest: create topic %s/%s: %w", stream, topicName, err)
	}
	return t.id, nil
}

// DeleteTopic deletes a topic with its partitions, messages and consumer
// groups, as the server's DeleteTopic does.
func (b *Broker) DeleteTopic(stream, topicName string) error {
	if _, err := (deleteTopicReq{stream: ident{name: stream}, topic: ident{name: topicName}}).exec(b, nil, nil); err != nil {
		return fmt.Errorf("iggytest: delete topic %s/%s: %w", stream, topicName, err)
	}
	return nil
}

// RenameTopic gives a topic a new name, as the server's UpdateTopic does:
// its id, partitions, messages and consumer groups (their offsets) stay.
func (b *Broker) RenameTopic(stream, topicName, newName string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, t, serr := b.resolveTopic(ident{name: stream}, ident{name: topicName})
	if serr != nil {
		return fmt.Errorf("iggytest: rename topic %s/%s: %w", stream, topicName, serr)
	}
	if s.lookupTopic(ident{name: newName}) != nil {
		return fmt.Errorf("iggytest: rename topic %s/%s: %q exists", stream, topicName, newName)
	}
	t.name = newName
	b.metaOp++
	return nil
}

// Restart is what clients see of a server restart that keeps its data:
// every connection drops, and with it every group membership (so the
// clients' rejoins rebalance the groups); messages and stored offsets stay;
// streams, topics and partitions get new creation times, as 0.8.0 stamps
// them when it loads them (a 0.10 partition keeps its incarnation). It
// returns how many connections it dropped.
func (b *Broker) Restart() int {
	b.mu.Lock()
	now := micros(time.Now())
	for _, st := range b.streams {
		if st == nil {
			continue
		}
		st.createdAt = now
		for _, t := range st.topics {
			if t == nil {
				continue
			}
			t.createdAt = now
			for _, p := range t.partitions {
				p.createdAt = now
			}
		}
	}
	b.mu.Unlock()
	return b.DropConnections()
}

// partitionOf must be called with b.mu held.
func (b *Broker) partitionOf(streamName, topicName string, partition uint32) (*topic, *partition, error) {
	_, t, serr := b.resolveTopic(ident{name: streamName}, ident{name: topicName})
	if serr != nil {
		return nil, nil, fmt.Errorf("%w: %s/%s: %w", ErrNotFound, streamName, topicName, serr)
	}
	if int(partition) >= len(t.partitions) {
		return t, nil, fmt.Errorf("%w: partition %d of %s/%s", ErrNotFound, partition, streamName, topicName)
	}
	return t, t.partitions[partition], nil
}

// buildFrame lays out one message the way SendMessages carries it.
func buildFrame(payload, userHeaders []byte, id [16]byte, origin uint64) []byte {
	f := make([]byte, messageHeaderSize, messageHeaderSize+len(payload)+len(userHeaders))
	copy(f[8:24], id[:])
	binary.LittleEndian.PutUint64(f[40:48], origin)
	binary.LittleEndian.PutUint32(f[48:52], uint32(len(userHeaders)))
	binary.LittleEndian.PutUint32(f[52:56], uint32(len(payload)))
	f = append(f, payload...)
	return append(f, userHeaders...)
}

// Append stores one message (userHeaders in wire form) and returns its offset.
func (b *Broker) Append(streamName, topicName string, partition uint32, payload []byte, userHeaders []byte) (uint64, error) {
	if len(payload) == 0 {
		return 0, errors.New("iggytest: append: empty payload (0.8 rejects it)")
	}
	now := time.Now()
	f := buildFrame(payload, userHeaders, [16]byte{}, micros(now))
	b.mu.Lock()
	defer b.mu.Unlock()
	_, p, err := b.partitionOf(streamName, topicName, partition)
	if err != nil {
		return 0, fmt.Errorf("iggytest: append: %w", err)
	}
	return p.appendFrames([][]byte{f}, micros(now), randomID), nil
}

// PartitionCount is the number of partitions of stream/topic.
func (b *Broker) PartitionCount(streamName, topicName string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, t, serr := b.resolveTopic(ident{name: streamName}, ident{name: topicName})
	if serr != nil {
		return 0, fmt.Errorf("iggytest: %w: %s/%s: %w", ErrNotFound, streamName, topicName, serr)
	}
	return len(t.partitions), nil
}

// HighOffset is the last offset written to a partition; ok=false if none was.
func (b *Broker) HighOffset(streamName, topicName string, partition uint32) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, p, err := b.partitionOf(streamName, topicName, partition)
	if err != nil || !p.written {
		return 0, false
	}
	return p.currentOffset(), true
}

// GroupOffset is the offset group committed on a partition; ok=false if none.
func (b *Broker) GroupOffset(streamName, topicName, groupName string, partition uint32) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, p, err := b.partitionOf(streamName, topicName, partition)
	if err != nil {
		return 0, false
	}
	g := t.lookupGroup(ident{name: groupName})
	if g == nil {
		return 0, false
	}
	off, ok := p.groups[g.id]
	return off, ok
}

// DeleteBelow drops a partition's messages with offset < offset (retention).
func (b *Broker) DeleteBelow(streamName, topicName string, partition uint32, offset uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, p, err := b.partitionOf(streamName, topicName, partition)
	if err != nil {
		return fmt.Errorf("iggytest: delete below: %w", err)
	}
	p.deleteBelow(offset)
	return nil
}

// Seed creates stream/topic if missing and appends messages sample JSON log lines
// (200-400 bytes, with content-type, attempt and source user headers) round-robin
// over the partitions. Content depends only on stream, topic and message number.
func (b *Broker) Seed(streamName, topicName string, partitions, messages int) error {
	if partitions <= 0 || messages < 0 {
		return fmt.Errorf("iggytest: seed %s/%s: need partitions > 0 and messages >= 0, got %d and %d", streamName, topicName, partitions, messages)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookupStream(ident{name: streamName})
	if s == nil {
		var serr *StatusError
		if s, serr = b.createStream(streamName); serr != nil {
			return fmt.Errorf("iggytest: seed: %w", serr)
		}
	}
	t := s.lookupTopic(ident{name: topicName})
	if t == nil {
		var serr *StatusError
		if t, serr = b.createTopic(ident{name: streamName}, topicName, partitions, 1, 0, 0, 0); serr != nil {
			return fmt.Errorf("iggytest: seed: %w", serr)
		}
	}
	if len(t.partitions) != partitions {
		return fmt.Errorf("iggytest: seed: %s/%s exists with %d partitions, not %d", streamName, topicName, len(t.partitions), partitions)
	}
	h := fnv.New64a()
	h.Write([]byte(streamName + "/" + topicName))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x1667))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range messages {
		ts := base.Add(time.Duration(i) * 1375 * time.Millisecond)
		payload := sampleLogLine(rng, i, ts)
		headers := SampleHeaders(1 + uint32(i%3))
		f := buildFrame(payload, headers, [16]byte{}, micros(ts))
		t.partitions[i%partitions].appendFrames([][]byte{f}, micros(time.Now()), randomID)
	}
	return nil
}

var (
	sampleServices = []string{"checkout-api", "payments", "inventory", "auth", "search", "notifications"}
	sampleLevels   = []string{"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}
	sampleMethods  = []string{"GET", "GET", "POST", "PUT", "DELETE"}
	samplePaths    = []string{"/v1/orders", "/v1/carts", "/v1/users", "/v1/payments", "/v1/search", "/healthz"}
	sampleMsgs     = []string{"request completed", "cache miss, loading from database", "upstream responded slowly", "token refreshed", "validation failed for field 'email'", "retrying after transient error"}
	sampleAgents   = []string{"Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0", "curl/8.5.0", "okhttp/4.12.0", "aws-sdk-go-v2/1.30.0"}
)

func sampleLogLine(rng *rand.Rand, seq int, ts time.Time) []byte {
	status := []int{200, 200, 200, 201, 204, 400, 404, 500, 503}[rng.IntN(9)]
	return fmt.Appendf(nil,
		`{"seq":%d,"ts":"%s","level":"%s","service":"%s","host":"ip-10-0-%d-%d","region":"eu-west-1","trace_id":"%016x%016x","method":"%s","path":"%s/%d","status":%d,"latency_ms":%d,"bytes":%d,"msg":"%s","user_agent":"%s"}`,
		seq, ts.Format("2006-01-02T15:04:05.000Z"), sampleLevels[rng.IntN(len(sampleLevels))],
		sampleServices[rng.IntN(len(sampleServices))], rng.IntN(8), rng.IntN(250), rng.Uint64(), rng.Uint64(),
		sampleMethods[rng.IntN(len(sampleMethods))], samplePaths[rng.IntN(len(samplePaths))], rng.IntN(100000),
		status, 1+rng.IntN(2500), rng.IntN(1<<20), sampleMsgs[rng.IntN(len(sampleMsgs))], sampleAgents[rng.IntN(len(sampleAgents))])
}

// Header kinds of Iggy user headers.
const (
	HeaderString byte = 2
	HeaderUint32 byte = 11
)

// AppendHeader appends one user header in Iggy wire form.
func AppendHeader(dst []byte, keyKind byte, key []byte, valueKind byte, value []byte) []byte {
	dst = append(dst, keyKind)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = append(dst, valueKind)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// SampleHeaders are the user headers Seed attaches: String content-type =
// application/json, Uint32 attempt, String source = iggytest.
func SampleHeaders(attempt uint32) []byte {
	h := AppendHeader(nil, HeaderString, []byte("content-type"), HeaderString, []byte("application/json"))
	h = AppendHeader(h, HeaderString, []byte("attempt"), HeaderUint32, binary.LittleEndian.AppendUint32(nil, attempt))
	return AppendHeader(h, HeaderString, []byte("source"), HeaderString, []byte("iggytest"))
}

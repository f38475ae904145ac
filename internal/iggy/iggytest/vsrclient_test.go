package iggytest_test

import (
	"crypto/rand"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// vsrClient is a small raw client of the VSR protocol built on internal/iggy/vsr:
// one request at a time, every frame checked as a client would.
type vsrClient struct {
	t       testing.TB
	nc      net.Conn
	d       vsr.Dialect
	client  vsr.U128
	session uint64
	req     uint64
	secret  [32]byte
	// ctx is the 0.12 partition context stamped on the next requests.
	ctx vsr.PartitionContext
}

// vsrReply is one frame a client received: a reply or an eviction.
type vsrReply struct {
	h     vsr.ReplyHeader
	body  []byte
	evict *vsr.Eviction
}

func startBroker(t testing.TB, opts ...iggytest.Option) *iggytest.Broker {
	t.Helper()
	b, err := iggytest.Start(append([]iggytest.Option{iggytest.WithToken(testToken)}, opts...)...)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newClientID() vsr.U128 {
	var u vsr.U128
	for u.IsZero() {
		_, _ = rand.Read(u[:])
	}
	return u
}

func dialVSR(t testing.TB, addr string, d vsr.Dialect) *vsrClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	c := &vsrClient{t: t, nc: nc, d: d, client: newClientID()}
	_, _ = rand.Read(c.secret[:])
	return c
}

// loginVSR dials and logs in as iggy/iggy.
func loginVSR(t testing.TB, addr string, d vsr.Dialect) *vsrClient {
	t.Helper()
	c := dialVSR(t, addr, d)
	if r := c.login(d.Version(), "iggy", "iggy"); r.evict != nil || r.h.Status != 0 {
		t.Fatalf("login: eviction %+v status %d", r.evict, r.h.Status)
	}
	return c
}

// write sends a request header and body.
func (c *vsrClient) write(h vsr.RequestHeader, body []byte) {
	c.t.Helper()
	h.Size = uint32(vsr.HeaderSize + len(body))
	frame := append(vsr.AppendRequestHeader(nil, c.d, &h), body...)
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read reads one frame, failing the test after 5 s.
func (c *vsrClient) read() vsrReply {
	c.t.Helper()
	r, err := c.readWithin(5 * time.Second)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return r
}

func (c *vsrClient) readWithin(d time.Duration) (vsrReply, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	defer func() { _ = c.nc.SetReadDeadline(time.Time{}) }()
	hdr := make([]byte, vsr.HeaderSize)
	if _, err := io.ReadFull(c.nc, hdr); err != nil {
		return vsrReply{}, err
	}
	cmd, size, err := vsr.FrameKind(hdr, vsr.MaxFrameSize)
	if err != nil {
		return vsrReply{}, err
	}
	if cmd == vsr.CommandEviction {
		e, err := vsr.DecodeEviction(hdr)
		if err != nil {
			return vsrReply{}, err
		}
		if e.Client != c.client {
			return vsrReply{}, errors.New("eviction names another client")
		}
		return vsrReply{evict: &e}, nil
	}
	h, err := vsr.DecodeReplyHeader(hdr, c.d)
	if err != nil {
		return vsrReply{}, err
	}
	body := make([]byte, size-vsr.HeaderSize)
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return vsrReply{}, err
	}
	if h.Status != 0 && len(body) != 0 {
		return vsrReply{}, errors.New("a status reply with a body")
	}
	return vsrReply{h: h, body: body}, nil
}

// header builds the header of a request of code: replicated operations take the
// next request number, 0.11 metadata operations stamp the body checksum, 0.12 ones
// a random identifier.
func (c *vsrClient) header(code uint32, body []byte) vsr.RequestHeader {
	op, ok := vsr.OperationOf(code)
	if !ok {
		op = vsr.OpNonReplicated
	}
	if op.Replicated() {
		c.req++
	}
	h := vsr.RequestHeader{Client: c.client, Request: max(c.req, 1), Operation: op, Session: c.session, Code: code}
	if c.session == 0 && op == vsr.OpNonReplicated {
		h.Request = 0
	}
	if op.Replicated() && op < vsr.OpSendMessages {
		if c.d == vsr.V011 {
			h.RequestChecksum = vsr.BodyChecksum(body)
		} else {
			h.RequestChecksum = newClientID()
		}
	}
	switch code {
	case vsr.CodePoll, vsr.CodeSend, vsr.CodeStoreOffset, vsr.CodeDeleteOffset, vsr.CodeGetOffset:
		h.PartitionIncarnation, h.OwnerGeneration, h.MinimumMetadataOp = c.ctx.Incarnation, c.ctx.OwnerGeneration, c.ctx.MetadataOp
	}
	return h
}

// do sends a request of code and reads its answer; the reply echoes the request.
func (c *vsrClient) do(code uint32, body []byte) vsrReply {
	c.t.Helper()
	h := c.header(code, body)
	c.write(h, body)
	r := c.read()
	if r.evict == nil && (r.h.Client != h.Client || r.h.Request != h.Request || r.h.Operation != h.Operation || r.h.RequestChecksum != h.RequestChecksum) {
		c.t.Fatalf("code %d: reply header %+v does not echo request %+v", code, r.h, h)
	}
	return r
}

// call runs code and returns its payload (result section stripped) or the
// server's refusal as a *vsr.ServerError; an eviction fails the test.
func (c *vsrClient) call(code uint32, body []byte) ([]byte, error) {
	c.t.Helper()
	r := c.do(code, body)
	if r.evict != nil {
		c.t.Fatalf("code %d: evicted (%s)", code, r.evict.Reason)
	}
	if r.h.Status != 0 {
		return nil, &vsr.ServerError{Code: r.h.Status}
	}
	if r.h.Operation.ResultFramed() {
		return vsr.SplitResult(r.body)
	}
	return r.body, nil
}

func (c *vsrClient) must(code uint32, body []byte) []byte {
	c.t.Helper()
	out, err := c.call(code, body)
	if err != nil {
		c.t.Fatalf("%s: %v", vsr.CodeName(code), err)
	}
	return out
}

// wantStatus asserts that code answers the Iggy error want (status or result).
func (c *vsrClient) wantStatus(what string, code uint32, body []byte, want uint32) {
	c.t.Helper()
	_, err := c.call(code, body)
	if !vsr.IsStatus(err, want) {
		c.t.Fatalf("%s: got %v, want iggy error %d", what, err, want)
	}
}

// login sends a password login announcing version v.
func (c *vsrClient) login(v vsr.Version, user, pass string) vsrReply {
	c.t.Helper()
	return c.register(&vsr.Login{Version: v, SDKName: "go-test", SDKVersion: "0.0.1", Username: user, Password: pass, BindSecret: c.secret})
}

func (c *vsrClient) register(l *vsr.Login) vsrReply {
	c.t.Helper()
	body := vsr.AppendLogin(nil, c.d, l)
	h := vsr.RequestHeader{Client: c.client, Operation: vsr.OpRegister}
	if c.d == vsr.V011 {
		h.RequestChecksum = vsr.BodyChecksum(body)
	} else {
		h.RequestChecksum = newClientID()
	}
	c.write(h, body)
	r := c.read()
	if r.evict == nil && r.h.Status == 0 {
		payload, err := vsr.SplitResult(r.body)
		if err != nil {
			c.t.Fatalf("login reply: %v", err)
		}
		lr, err := vsr.DecodeLoginReply(payload)
		if err != nil {
			c.t.Fatalf("login reply: %v", err)
		}
		c.session = lr.Session
		c.req = 0
	}
	return r
}

// Request bodies.

func streamID(name string) vsr.Identifier { return vsr.NamedID(name) }

func (c *vsrClient) createStream(name string) {
	c.t.Helper()
	c.must(vsr.CodeCreateStream, vsr.AppendCreateStream(nil, name, nil))
}

func (c *vsrClient) createTopic(stream, name string, partitions uint32, opts ...vsr.Option) vsr.Topic {
	c.t.Helper()
	out := c.must(vsr.CodeCreateTopic, vsr.AppendCreateTopic(nil, &vsr.CreateTopic{Stream: streamID(stream), Partitions: partitions, Name: name, Options: opts}))
	t, ok, err := vsr.DecodeTopic(out, c.d)
	if err != nil || !ok {
		c.t.Fatalf("create topic reply: %v", err)
	}
	return t
}

func (c *vsrClient) getTopic(stream, topic string) (vsr.Topic, bool) {
	c.t.Helper()
	t, ok, err := vsr.DecodeTopic(c.must(vsr.CodeGetTopic, vsr.AppendTopicRef(nil, streamID(stream), streamID(topic))), c.d)
	if err != nil {
		c.t.Fatalf("get topic reply: %v", err)
	}
	return t, ok
}

// useTopic stamps the context of the topic's partition p on later requests (0.12).
func (c *vsrClient) useTopic(stream, topic string, p uint32) {
	c.t.Helper()
	if c.d < vsr.V012 {
		return
	}
	t, ok := c.getTopic(stream, topic)
	if !ok || int(p) >= len(t.Partitions) {
		c.t.Fatalf("topic %s/%s partition %d not found", stream, topic, p)
	}
	c.ctx = t.Partitions[p].Context
}

func groupRef(stream, topic, group string) []byte {
	return vsr.AppendGroupRef(nil, vsr.GroupRef{Stream: streamID(stream), Topic: streamID(topic), Group: streamID(group)})
}

func (c *vsrClient) sync(stream, topic, group string) (vsr.Assignment, bool) {
	c.t.Helper()
	a, member, err := vsr.DecodeAssignment(c.must(vsr.CodeSyncGroup, groupRef(stream, topic, group)))
	if err != nil {
		c.t.Fatalf("sync reply: %v", err)
	}
	return a, member
}

type sendMsg struct {
	payload string
	headers []byte
}

// send sends one batch to partition p and returns its base offset.
func (c *vsrClient) send(stream, topic string, p uint32, msgs ...sendMsg) uint64 {
	c.t.Helper()
	c.useTopic(stream, topic, p)
	out, err := c.trySend(stream, topic, p, msgs...)
	if err != nil {
		c.t.Fatalf("send: %v", err)
	}
	cs, err := vsr.DecodeConfirmations(out)
	if err != nil || len(cs) != 1 || cs[0].PartitionID != p {
		c.t.Fatalf("send confirmations %+v, %v", cs, err)
	}
	return cs[0].BaseOffset
}

func (c *vsrClient) trySend(stream, topic string, p uint32, msgs ...sendMsg) ([]byte, error) {
	c.t.Helper()
	batch := vsr.BeginBatch(nil, vsr.BatchHeader{OriginTimestamp: uint64(time.Now().UnixMicro())})
	for i, m := range msgs {
		batch = vsr.AppendFrame(batch, newClientID(), uint32(i), uint32(i), []byte(m.payload), m.headers)
	}
	batch = vsr.SealBatch(batch)
	body := vsr.AppendSend(nil, &vsr.Send{Stream: streamID(stream), Topic: streamID(topic), Partitioning: vsr.PartitioningPartition,
		Key: vsr.ToPartition(p), Count: uint32(len(msgs)), Batch: batch})
	return c.call(vsr.CodeSend, body)
}

func groupConsumer(g string) vsr.Consumer {
	return vsr.Consumer{Kind: vsr.ConsumerGroup, ID: vsr.NamedID(g)}
}

func single(id uint32) vsr.Consumer {
	return vsr.Consumer{Kind: vsr.ConsumerSingle, ID: vsr.NumericID(id)}
}

// poll polls partition p from offset and decodes the reply.
func (c *vsrClient) poll(stream, topic string, consumer vsr.Consumer, p uint32, strategy vsr.Strategy, count uint32) (vsr.PollReply, []vsr.Message) {
	c.t.Helper()
	out, err := c.call(vsr.CodePoll, vsr.AppendPoll(nil, &vsr.Poll{Consumer: consumer, Stream: streamID(stream), Topic: streamID(topic),
		Partition: vsr.PartitionID(p), Strategy: strategy, Count: count}))
	if err != nil {
		c.t.Fatalf("poll: %v", err)
	}
	return decodePoll(c.t, out, c.d)
}

func decodePoll(t testing.TB, out []byte, d vsr.Dialect) (vsr.PollReply, []vsr.Message) {
	t.Helper()
	pr, err := vsr.DecodePollReply(out, d)
	if err != nil {
		t.Fatalf("poll reply: %v", err)
	}
	var msgs []vsr.Message
	err = pr.Messages(true, func(m *vsr.Message) error {
		cp := *m
		cp.Payload, cp.Headers = append([]byte(nil), m.Payload...), append([]byte(nil), m.Headers...)
		msgs = append(msgs, cp)
		return nil
	})
	if err != nil {
		t.Fatalf("poll records: %v", err)
	}
	return pr, msgs
}

func offsetBody(code uint32, stream, topic string, consumer vsr.Consumer, p uint32, off uint64) []byte {
	return vsr.AppendOffset(nil, code, &vsr.Offset{Consumer: consumer, Stream: streamID(stream), Topic: streamID(topic),
		Partition: vsr.PartitionID(p), Offset: off, Ack: vsr.AckQuorum})
}

func (c *vsrClient) store(stream, topic string, consumer vsr.Consumer, p uint32, off uint64) error {
	c.t.Helper()
	_, err := c.call(vsr.CodeStoreOffset, offsetBody(vsr.CodeStoreOffset, stream, topic, consumer, p, off))
	return err
}

func offsetsOf(msgs []vsr.Message) []uint64 {
	out := make([]uint64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Offset
	}
	return out
}

func payloadsOf(msgs []vsr.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Payload)
	}
	return out
}

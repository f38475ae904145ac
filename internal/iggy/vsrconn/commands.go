package vsrconn

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// malformed cuts l for a reply body that did not decode.
func (c *Client) malformed(l *link, code uint32, err error) error {
	return l.cut(malformedCut(fmt.Errorf("%s reply: %w", vsr.CodeName(code), err)))
}

// Ping sends a ping.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, c.primary, vsr.CodePing, nil, nil)
	return err
}

// GetStream reads a stream and its topics; ok is false when there is none.
func (c *Client) GetStream(ctx context.Context, id vsr.Identifier) (s vsr.Stream, ok bool, err error) {
	b, err := c.do(ctx, c.primary, vsr.CodeGetStream, vsr.AppendIdentifier(nil, id), nil)
	if err != nil {
		return s, false, err
	}
	if s, ok, err = vsr.DecodeStream(b, c.dialect); err != nil {
		return s, false, c.malformed(c.primary, vsr.CodeGetStream, err)
	}
	return s, ok, nil
}

// GetTopic reads a topic and its partitions; ok is false when the stream
// or the topic does not exist.
func (c *Client) GetTopic(ctx context.Context, stream, topic vsr.Identifier) (t vsr.Topic, ok bool, err error) {
	b, err := c.do(ctx, c.primary, vsr.CodeGetTopic, vsr.AppendTopicRef(nil, stream, topic), nil)
	if err != nil {
		return t, false, err
	}
	if t, ok, err = vsr.DecodeTopic(b, c.dialect); err != nil {
		return t, false, c.malformed(c.primary, vsr.CodeGetTopic, err)
	}
	return t, ok, nil
}

// CreateStream creates a stream.
func (c *Client) CreateStream(ctx context.Context, name string) (vsr.Stream, error) {
	if err := vsr.CheckName("stream name", name); err != nil {
		return vsr.Stream{}, err
	}
	b, err := c.do(ctx, c.primary, vsr.CodeCreateStream, vsr.AppendCreateStream(nil, name, nil), nil)
	if err != nil {
		return vsr.Stream{}, err
	}
	s, _, err := vsr.DecodeStream(b, c.dialect)
	if err != nil {
		return s, c.malformed(c.primary, vsr.CodeCreateStream, err)
	}
	return s, nil
}

// CreateTopic creates a topic with partitions partitions and options.
func (c *Client) CreateTopic(ctx context.Context, stream vsr.Identifier, name string, partitions uint32, opts []vsr.Option) (vsr.Topic, error) {
	if err := vsr.CheckName("topic name", name); err != nil {
		return vsr.Topic{}, err
	}
	body := vsr.AppendCreateTopic(nil, &vsr.CreateTopic{Stream: stream, Partitions: partitions, Name: name, Options: opts})
	b, err := c.do(ctx, c.primary, vsr.CodeCreateTopic, body, nil)
	if err != nil {
		return vsr.Topic{}, err
	}
	t, _, err := vsr.DecodeTopic(b, c.dialect)
	if err != nil {
		return t, c.malformed(c.primary, vsr.CodeCreateTopic, err)
	}
	return t, nil
}

// DeleteStream deletes a stream with its topics.
func (c *Client) DeleteStream(ctx context.Context, stream vsr.Identifier) error {
	_, err := c.do(ctx, c.primary, vsr.CodeDeleteStream, vsr.AppendIdentifier(nil, stream), nil)
	return err
}

// DeleteTopic deletes a topic with its partitions and consumer groups.
func (c *Client) DeleteTopic(ctx context.Context, stream, topic vsr.Identifier) error {
	_, err := c.do(ctx, c.primary, vsr.CodeDeleteTopic, vsr.AppendTopicRef(nil, stream, topic), nil)
	return err
}

// CreateGroup creates a consumer group on a topic.
func (c *Client) CreateGroup(ctx context.Context, stream, topic vsr.Identifier, name string) (vsr.Group, error) {
	if err := vsr.CheckName("consumer group name", name); err != nil {
		return vsr.Group{}, err
	}
	b, err := c.do(ctx, c.primary, vsr.CodeCreateGroup, vsr.AppendCreateGroup(nil, stream, topic, name), nil)
	if err != nil {
		return vsr.Group{}, err
	}
	g, _, err := vsr.DecodeGroup(b)
	if err != nil {
		return g, c.malformed(c.primary, vsr.CodeCreateGroup, err)
	}
	return g, nil
}

// GetGroup reads a consumer group and its members; ok is false when the
// group does not exist.
func (c *Client) GetGroup(ctx context.Context, g vsr.GroupRef) (vsr.Group, bool, error) {
	b, err := c.do(ctx, c.primary, vsr.CodeGetGroup, vsr.AppendGroupRef(nil, g), nil)
	if err != nil {
		return vsr.Group{}, false, err
	}
	grp, ok, err := vsr.DecodeGroup(b)
	if err != nil {
		return grp, false, c.malformed(c.primary, vsr.CodeGetGroup, err)
	}
	return grp, ok, nil
}

// JoinGroup joins a consumer group (idempotent for this session).
func (c *Client) JoinGroup(ctx context.Context, g vsr.GroupRef) error {
	_, err := c.do(ctx, c.primary, vsr.CodeJoinGroup, vsr.AppendGroupRef(nil, g), nil)
	return err
}

// LeaveGroup leaves a consumer group.
func (c *Client) LeaveGroup(ctx context.Context, g vsr.GroupRef) error {
	_, err := c.do(ctx, c.primary, vsr.CodeLeaveGroup, vsr.AppendGroupRef(nil, g), nil)
	return err
}

// SyncGroup returns this session's pollable partitions of a group and the
// group's generation; member is false when the session is not a member.
func (c *Client) SyncGroup(ctx context.Context, g vsr.GroupRef) (a vsr.Assignment, member bool, err error) {
	b, err := c.do(ctx, c.primary, vsr.CodeSyncGroup, vsr.AppendGroupRef(nil, g), nil)
	if err != nil {
		return a, false, err
	}
	if a, member, err = vsr.DecodeAssignment(b); err != nil {
		return a, false, c.malformed(c.primary, vsr.CodeSyncGroup, err)
	}
	return a, member, nil
}

// Poll polls one partition. The reply's records alias a buffer of its own,
// which the caller may keep.
func (c *Client) Poll(ctx context.Context, p *vsr.Poll, pctx *vsr.PartitionContext) (vsr.PollReply, error) {
	r, _, err := c.PollInto(ctx, p, pctx, nil)
	return r, err
}

// PollInto is Poll reading the reply into buf when it is large enough, else
// into a new buffer; it returns the buffer it used. The reply's messages
// alias it: the caller may pass it to its next PollInto once it is done
// with them, so that polls do not allocate (nor the collector reclaim) a
// reply's worth of bytes each.
func (c *Client) PollInto(ctx context.Context, p *vsr.Poll, pctx *vsr.PartitionContext, buf []byte) (vsr.PollReply, []byte, error) {
	key := routeKey{p.Stream, p.Topic, p.Partition.ID}
	b, l, err := c.partitionOp(ctx, vsr.CodePoll, vsr.AppendPoll(nil, p), key, pctx, buf)
	if err != nil {
		return vsr.PollReply{}, buf, err
	}
	if cap(b) > cap(buf) {
		buf = b[:0:cap(b)]
	}
	r, err := vsr.DecodePollReply(b, c.dialect)
	if err != nil {
		return r, buf, c.malformed(l, vsr.CodePoll, err)
	}
	return r, buf, nil
}

// StoredOffset reads a consumer's stored offset; ok is false when none is
// stored.
func (c *Client) StoredOffset(ctx context.Context, o *vsr.Offset, pctx *vsr.PartitionContext) (vsr.StoredOffset, bool, error) {
	key := routeKey{o.Stream, o.Topic, o.Partition.ID}
	b, l, err := c.partitionOp(ctx, vsr.CodeGetOffset, vsr.AppendOffset(nil, vsr.CodeGetOffset, o), key, pctx, nil)
	if err != nil {
		return vsr.StoredOffset{}, false, err
	}
	so, ok, err := vsr.DecodeStoredOffset(b)
	if err != nil {
		return so, false, c.malformed(l, vsr.CodeGetOffset, err)
	}
	return so, ok, nil
}

// StoreOffset stores o.Offset for o's consumer and partition.
func (c *Client) StoreOffset(ctx context.Context, o *vsr.Offset, pctx *vsr.PartitionContext) error {
	key := routeKey{o.Stream, o.Topic, o.Partition.ID}
	_, _, err := c.partitionOp(ctx, vsr.CodeStoreOffset, vsr.AppendOffset(nil, vsr.CodeStoreOffset, o), key, pctx, nil)
	return err
}

// DeleteOffset deletes o's consumer's stored offset.
func (c *Client) DeleteOffset(ctx context.Context, o *vsr.Offset, pctx *vsr.PartitionContext) error {
	key := routeKey{o.Stream, o.Topic, o.Partition.ID}
	_, _, err := c.partitionOp(ctx, vsr.CodeDeleteOffset, vsr.AppendOffset(nil, vsr.CodeDeleteOffset, o), key, pctx, nil)
	return err
}

// Outgoing is one message to send.
type Outgoing struct {
	Payload []byte
	// Headers are user headers in wire form (vsr.AppendHeader pairs).
	Headers []byte
	// ID is the message's id; zero: a random one.
	ID vsr.U128
	// OriginTimestamp is the producer's time (µs); zero: now.
	OriginTimestamp uint64
}

// ErrOriginSpan is a batch whose origin times span more than a frame's
// u32 microseconds of delta (about 71 minutes) can say.
var ErrOriginSpan = errors.New("iggy send: the messages' origin times span more than 2^32 µs (about 71 minutes), more than one batch can hold")

// Send sends msgs to one partition as one batch, with their ids and origin
// times (random ids and the current time where they have none), and
// returns the base offset the server confirmed (ok false when it reported
// the batch a duplicate). The batch's origin time is the earliest, so that
// messages of several producers keep theirs, in any order.
func (c *Client) Send(ctx context.Context, stream, topic vsr.Identifier, partition uint32, msgs []Outgoing, pctx *vsr.PartitionContext) (base uint64, ok bool, err error) {
	if len(msgs) == 0 {
		return 0, false, errors.New("iggy send: no messages")
	}
	now := uint64(time.Now().UnixMicro())
	origin := func(m *Outgoing) uint64 {
		if m.OriginTimestamp == 0 {
			return now
		}
		return m.OriginTimestamp
	}
	first, last := uint64(math.MaxUint64), uint64(0)
	for i := range msgs {
		ts := origin(&msgs[i])
		first, last = min(first, ts), max(last, ts)
	}
	if last-first > math.MaxUint32 {
		return 0, false, ErrOriginSpan
	}
	// The body is the send's metadata and then its batch, built in place in
	// one buffer of the size they take.
	size := 64 + vsr.BatchHeaderSize
	for i := range msgs {
		size += vsr.FrameHeaderSize + len(msgs[i].Payload) + len(msgs[i].Headers)
	}
	body := vsr.AppendSend(make([]byte, 0, size), &vsr.Send{Stream: stream, Topic: topic, Partitioning: vsr.PartitioningPartition,
		Key: vsr.ToPartition(partition), Count: uint32(len(msgs))})
	at := len(body)
	body = vsr.BeginBatch(body, vsr.BatchHeader{OriginTimestamp: first})
	for i := range msgs {
		m := &msgs[i]
		id := m.ID
		if id == (vsr.U128{}) {
			_, _ = rand.Read(id[:])
		}
		body = vsr.AppendFrame(body, id, uint32(i), uint32(origin(m)-first), m.Payload, m.Headers)
	}
	vsr.SealBatch(body[at:])
	b, l, err := c.partitionOp(ctx, vsr.CodeSend, body, routeKey{stream, topic, partition}, pctx, nil)
	if err != nil {
		return 0, false, err
	}
	cs, err := vsr.DecodeConfirmations(b)
	if err != nil {
		return 0, false, c.malformed(l, vsr.CodeSend, err)
	}
	for _, cf := range cs {
		if cf.PartitionID == partition {
			return cf.BaseOffset, true, nil
		}
	}
	return 0, false, nil
}

// ClusterMetadata reads the cluster's nodes.
func (c *Client) ClusterMetadata(ctx context.Context) (vsr.Cluster, error) {
	b, err := c.do(ctx, c.primary, vsr.CodeClusterMetadata, nil, nil)
	if err != nil {
		return vsr.Cluster{}, err
	}
	cl, err := vsr.DecodeCluster(b, c.dialect)
	if err != nil {
		return cl, c.malformed(c.primary, vsr.CodeClusterMetadata, err)
	}
	return cl, nil
}

// routeKey names one partition as the requests spell it.
type routeKey struct {
	stream, topic vsr.Identifier
	partition     uint32
}

// partitionOp sends a partition request to the partition's primary: the
// connection it was routed to before, else the primary connection. A 0.10
// server that answers NotPrimary (89) is asked for the route (105), and
// the request goes once more to the node the route names — only if the
// cluster metadata lists that node; its address is the metadata's, never
// one a reply invents.
func (c *Client) partitionOp(ctx context.Context, code uint32, body []byte, key routeKey, pctx *vsr.PartitionContext, into []byte) ([]byte, *link, error) {
	l := c.linkFor(key)
	b, err := c.doInto(ctx, l, code, body, pctx, into)
	if c.dialect < vsr.V012 || !vsr.IsStatus(err, vsr.StatusNotPrimary) {
		return b, l, err
	}
	if l, err = c.route(ctx, key); err != nil {
		return nil, nil, err
	}
	b, err = c.doInto(ctx, l, code, body, pctx, into)
	return b, l, err
}

func (c *Client) linkFor(key routeKey) *link {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.routes[key]; l != nil && l.lostErr() == nil {
		return l
	}
	return c.primary
}

func (c *Client) nodeLinks() []*link {
	out := make([]*link, 0, len(c.nodes))
	for _, l := range c.nodes {
		out = append(out, l)
	}
	return out
}

// route asks for key's primary and returns the connection to it. One
// lookup runs at a time, so two refusals for partitions of one node share
// its connection.
func (c *Client) route(ctx context.Context, key routeKey) (*link, error) {
	c.routeMu.Lock()
	defer c.routeMu.Unlock()
	select {
	case <-c.stop:
		return nil, fmt.Errorf("%w: the client is closed", ErrConnectionLost)
	default:
	}
	b, err := c.do(ctx, c.primary, vsr.CodePartitionRoute, vsr.AppendRouteRequest(nil, key.stream, key.topic, key.partition), nil)
	if err != nil {
		return nil, fmt.Errorf("iggy get partition route: %w", err)
	}
	rt, err := vsr.DecodeRoute(b)
	if err != nil {
		return nil, c.malformed(c.primary, vsr.CodePartitionRoute, err)
	}
	cl, err := c.ClusterMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("iggy get cluster metadata: %w", err)
	}
	var node *vsr.Node
	for i := range cl.Nodes {
		if cl.Nodes[i].ReplicaID == rt.PrimaryReplica {
			node = &cl.Nodes[i]
			break
		}
	}
	where := fmt.Sprintf("partition %d of %s/%s", key.partition, key.stream, key.topic)
	if node == nil || node.TCP == 0 {
		return nil, fmt.Errorf("%w: %s: the server at %s names replica %d as the primary, but its cluster metadata (%s) lists no TCP endpoint for it; nothing was dialed",
			ErrRouteRefused, where, c.cfg.Address, rt.PrimaryReplica, describeNodes(cl.Nodes))
	}
	addr := net.JoinHostPort(node.IP, strconv.Itoa(int(node.TCP)))
	c.mu.Lock()
	home := SameEndpoint(addr, c.cfg.Address) || SameEndpoint(addr, c.primary.nc.RemoteAddr().String())
	l := c.nodes[node.ReplicaID]
	c.mu.Unlock()
	switch {
	case home:
		l = c.primary
	case l == nil || l.lostErr() != nil:
		if l, err = c.bind(ctx, addr, node.IP); err != nil {
			return nil, fmt.Errorf("iggy: %s: connect to its primary, replica %d at %s: %w", where, node.ReplicaID, addr, err)
		}
	}
	c.mu.Lock()
	select {
	case <-c.stop: // closed while it bound: the new connection goes too
		c.mu.Unlock()
		if !home {
			l.close()
		}
		return nil, fmt.Errorf("%w: the client is closed", ErrConnectionLost)
	default:
	}
	if c.routes == nil {
		c.routes, c.nodes = map[routeKey]*link{}, map[uint8]*link{}
	}
	c.routes[key] = l
	if !home {
		c.nodes[node.ReplicaID] = l
	}
	c.mu.Unlock()
	return l, nil
}

// bind connects to another node with the same TLS settings and attaches
// the connection to this session (BindSession), so it acts as the same
// client and group member.
func (c *Client) bind(ctx context.Context, addr, host string) (*link, error) {
	tc := c.cfg.TLS
	if tc != nil && c.cfg.TLSDomain == "" {
		tc = tc.Clone()
		tc.ServerName = host
	}
	l, err := dialLink(ctx, addr, c.cfg.ConnectTimeout, tc, c.cfg.MaxReply)
	if err != nil {
		return nil, err
	}
	l.dialect = c.dialect
	body := vsr.AppendBindSession(nil, &vsr.BindSession{Version: c.version, SDKName: c.cfg.SDKName, SDKVersion: c.cfg.SDKVersion,
		Client: c.id, Session: c.session, BindSecret: c.secret})
	b, err := c.do(ctx, l, vsr.CodeBindSession, body, nil)
	if err != nil {
		l.close()
		return nil, err
	}
	lr, err := vsr.DecodeLoginReply(b)
	if err != nil {
		if p, serr := vsr.SplitResult(b); serr == nil {
			lr, err = vsr.DecodeLoginReply(p)
		}
	}
	if err != nil {
		return nil, c.malformed(l, vsr.CodeBindSession, err)
	}
	if lr.Session != c.session {
		return nil, l.cut(malformedCut(fmt.Errorf("bind session: the node bound session %d, not %d", lr.Session, c.session)))
	}
	return l, nil
}

func describeNodes(nodes []vsr.Node) string {
	if len(nodes) == 0 {
		return "no nodes"
	}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("replica %d %q at %s", n.ReplicaID, n.Name, net.JoinHostPort(n.IP, strconv.Itoa(int(n.TCP))))
	}
	return strings.Join(parts, ", ")
}

// SameEndpoint compares host:port addresses, IPs by value (a server's own
// address in its cluster metadata, against the one dialed).
func SameEndpoint(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb {
		return false
	}
	if ia, ib := net.ParseIP(ha), net.ParseIP(hb); ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return strings.EqualFold(ha, hb)
}

package vsr

// SplitResult strips the result section of a result-framed reply body:
// [count:u32] then count {index:u32, result:u32}. A count of 0 is success
// and the payload follows; otherwise the first result is the error code,
// returned as a *ServerError.
func SplitResult(body []byte) ([]byte, error) {
	if len(body) < 4 {
		return nil, malformed("result section", "%d bytes, want at least 4", len(body))
	}
	n := le.Uint32(body)
	if n == 0 {
		return body[4:], nil
	}
	if uint64(len(body)-4) < 8*uint64(n) {
		return nil, malformed("result section", "claims %d results in %d bytes", n, len(body)-4)
	}
	code := le.Uint32(body[8:])
	if code == 0 {
		return nil, malformed("result section", "a rejection with error code 0")
	}
	return nil, &ServerError{Code: code}
}

// AppendResultOK appends the result section of a success.
func AppendResultOK(dst []byte) []byte { return le.AppendUint32(dst, 0) }

// AppendResultError appends a result section rejecting with code.
func AppendResultError(dst []byte, code uint32) []byte {
	dst = le.AppendUint32(dst, 1)
	dst = le.AppendUint32(dst, 0)
	return le.AppendUint32(dst, code)
}

// LoginReply is the payload of a successful login (after the result section).
type LoginReply struct {
	UserID        uint32
	Session       uint64
	ServerVersion Version
	// ServerName is the server's release ("0.9.0").
	ServerName string
}

// AppendLoginReply appends r.
func AppendLoginReply(dst []byte, r *LoginReply) []byte {
	dst = le.AppendUint32(dst, r.UserID)
	dst = le.AppendUint64(dst, r.Session)
	dst = le.AppendUint32(dst, uint32(r.ServerVersion))
	return appendName(dst, r.ServerName)
}

// DecodeLoginReply reads a login reply's payload.
func DecodeLoginReply(b []byte) (LoginReply, error) {
	r := newDecoder("login reply", b)
	lr := LoginReply{UserID: r.u32("user id"), Session: r.u64("session"), ServerVersion: Version(r.u32("server protocol version"))}
	if r.left() > 0 {
		lr.ServerName = r.name("server version")
	}
	if r.err == nil && lr.Session == 0 {
		r.fail("session 0")
	}
	return lr, r.end()
}

// Stream is a StreamResponse and, in GetStream replies, its topics.
type Stream struct {
	ID            uint32
	CreatedAt     uint64
	TopicsCount   uint32
	Size          uint64
	MessagesCount uint64
	Name          string
	// Options and Derived are the option blocks (Derived: 0.12 only).
	Options, Derived []byte
	Topics           []Topic
}

// AppendStream appends s's record (not its topics).
func AppendStream(dst []byte, d Dialect, s *Stream) []byte {
	dst = le.AppendUint32(dst, s.ID)
	dst = le.AppendUint64(dst, s.CreatedAt)
	dst = le.AppendUint32(dst, s.TopicsCount)
	dst = le.AppendUint64(dst, s.Size)
	dst = le.AppendUint64(dst, s.MessagesCount)
	dst = appendName(dst, s.Name)
	dst = appendBlock(dst, s.Options)
	if d >= V012 {
		dst = appendBlock(dst, s.Derived)
	}
	return dst
}

// DecodeStream reads a GetStream (or CreateStream) reply payload: the
// stream record, then exactly topics_count topic headers. An empty payload
// is a stream not found (ok false).
func DecodeStream(b []byte, d Dialect) (s Stream, ok bool, err error) {
	if len(b) == 0 {
		return s, false, nil
	}
	r := newDecoder("stream record", b)
	s.ID, s.CreatedAt, s.TopicsCount = r.u32("id"), r.u64("created at"), r.u32("topics count")
	s.Size, s.MessagesCount, s.Name = r.u64("size"), r.u64("messages count"), r.name("name")
	s.Options = r.block("options")
	if d >= V012 {
		s.Derived = r.block("derived options")
	}
	if r.err == nil && uint64(s.TopicsCount)*33 > uint64(r.left()) {
		r.fail("claims %d topics in %d bytes", s.TopicsCount, r.left())
	}
	for i := uint32(0); r.err == nil && i < s.TopicsCount; i++ {
		s.Topics = append(s.Topics, r.topicHeader(d))
	}
	return s, true, r.end()
}

// Topic is a TopicHeader and, in GetTopic replies, its partitions.
type Topic struct {
	ID              uint32
	CreatedAt       uint64
	PartitionsCount uint32
	// MessageExpiry, Compression and MaxTopicSize are in the 0.11 header
	// only (0.12 has them in the options).
	MessageExpiry uint64
	Compression   uint8
	MaxTopicSize  uint64
	Size          uint64
	MessagesCount uint64
	Name          string
	Options       []byte
	Derived       []byte
	Partitions    []Partition
}

// AppendTopicHeader appends t's header (not its partitions).
func AppendTopicHeader(dst []byte, d Dialect, t *Topic) []byte {
	dst = le.AppendUint32(dst, t.ID)
	dst = le.AppendUint64(dst, t.CreatedAt)
	dst = le.AppendUint32(dst, t.PartitionsCount)
	if d < V012 {
		dst = le.AppendUint64(dst, t.MessageExpiry)
		dst = append(dst, t.Compression)
		dst = le.AppendUint64(dst, t.MaxTopicSize)
	}
	dst = le.AppendUint64(dst, t.Size)
	dst = le.AppendUint64(dst, t.MessagesCount)
	dst = appendName(dst, t.Name)
	dst = appendBlock(dst, t.Options)
	return appendBlock(dst, t.Derived)
}

func (r *decoder) topicHeader(d Dialect) Topic {
	var t Topic
	t.ID, t.CreatedAt, t.PartitionsCount = r.u32("topic id"), r.u64("topic created at"), r.u32("partitions count")
	if d < V012 {
		t.MessageExpiry, t.Compression, t.MaxTopicSize = r.u64("message expiry"), r.u8("compression"), r.u64("max topic size")
	}
	t.Size, t.MessagesCount, t.Name = r.u64("topic size"), r.u64("topic messages count"), r.name("topic name")
	t.Options, t.Derived = r.block("topic options"), r.block("topic derived options")
	return t
}

// PartitionContext (0.12) identifies the partition a request is for: its
// incarnation (a delete and re-create changes it), owner generation and
// metadata op.
type PartitionContext struct {
	Incarnation     uint64
	OwnerGeneration uint64
	MetadataOp      uint64
}

// PartitionContextSize is the size of a PartitionContext on the wire.
const PartitionContextSize = 24

func appendContext(dst []byte, c PartitionContext) []byte {
	dst = le.AppendUint64(dst, c.Incarnation)
	dst = le.AppendUint64(dst, c.OwnerGeneration)
	return le.AppendUint64(dst, c.MetadataOp)
}

func (r *decoder) context() PartitionContext {
	return PartitionContext{Incarnation: r.u64("incarnation"), OwnerGeneration: r.u64("owner generation"), MetadataOp: r.u64("metadata op")}
}

// Partition is a PartitionResponse: 40 bytes in 0.11; in 0.12 (dev
// layout) the 24-byte context and the replica lists follow.
type Partition struct {
	ID            uint32
	CreatedAt     uint64
	Segments      uint32
	CurrentOffset uint64
	Size          uint64
	MessagesCount uint64
	Context       PartitionContext
	// Members and InSync (0.12) are the replica ids holding the partition.
	Members, InSync []uint8
}

// AppendPartition appends p.
func AppendPartition(dst []byte, d Dialect, p *Partition) []byte {
	dst = le.AppendUint32(dst, p.ID)
	dst = le.AppendUint64(dst, p.CreatedAt)
	dst = le.AppendUint32(dst, p.Segments)
	dst = le.AppendUint64(dst, p.CurrentOffset)
	dst = le.AppendUint64(dst, p.Size)
	dst = le.AppendUint64(dst, p.MessagesCount)
	if d >= V012 {
		dst = appendContext(dst, p.Context)
		dst = append(dst, byte(len(p.Members)))
		dst = append(dst, p.Members...)
		dst = append(dst, byte(len(p.InSync)))
		dst = append(dst, p.InSync...)
	}
	return dst
}

func (r *decoder) partition(d Dialect) Partition {
	p := Partition{ID: r.u32("partition id"), CreatedAt: r.u64("partition created at"), Segments: r.u32("segments count")}
	p.CurrentOffset, p.Size, p.MessagesCount = r.u64("current offset"), r.u64("partition size"), r.u64("partition messages count")
	if d >= V012 {
		p.Context = r.context()
		p.Members = r.bytes(int(r.u8("members count")), "members")
		p.InSync = r.bytes(int(r.u8("in-sync count")), "in-sync members")
	}
	return p
}

// DecodeTopic reads a GetTopic (or CreateTopic) payload: the header, then
// exactly its partitions. An empty payload is a topic not found.
func DecodeTopic(b []byte, d Dialect) (t Topic, ok bool, err error) {
	if len(b) == 0 {
		return t, false, nil
	}
	r := newDecoder("topic record", b)
	t = r.topicHeader(d)
	if r.err == nil && uint64(t.PartitionsCount)*partitionRecordMin(d) > uint64(r.left()) {
		r.fail("claims %d partitions in %d bytes", t.PartitionsCount, r.left())
	}
	if r.err == nil {
		t.Partitions = make([]Partition, 0, t.PartitionsCount)
	}
	for i := uint32(0); r.err == nil && i < t.PartitionsCount; i++ {
		t.Partitions = append(t.Partitions, r.partition(d))
	}
	return t, true, r.end()
}

func partitionRecordMin(d Dialect) uint64 {
	if d >= V012 {
		return 40 + PartitionContextSize + 2
	}
	return 40
}

func appendBlock(dst, b []byte) []byte {
	dst = le.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// Group is a CGHeader and, in GetConsumerGroup replies, its members.
type Group struct {
	ID              uint32
	PartitionsCount uint32
	MembersCount    uint32
	Name            string
	Members         []Member
}

// Member is one group member: a server-side member number (not a client
// id) and its partitions, pending revocations included.
type Member struct {
	ID         uint32
	Partitions []uint32
}

// AppendGroup appends g's header, and its members when withMembers.
func AppendGroup(dst []byte, g *Group, withMembers bool) []byte {
	dst = le.AppendUint32(dst, g.ID)
	dst = le.AppendUint32(dst, g.PartitionsCount)
	dst = le.AppendUint32(dst, g.MembersCount)
	dst = appendName(dst, g.Name)
	if !withMembers {
		return dst
	}
	for _, m := range g.Members {
		dst = le.AppendUint32(dst, m.ID)
		dst = le.AppendUint32(dst, uint32(len(m.Partitions)))
		for _, p := range m.Partitions {
			dst = le.AppendUint32(dst, p)
		}
	}
	return dst
}

func (r *decoder) groupHeader() Group {
	return Group{ID: r.u32("group id"), PartitionsCount: r.u32("partitions count"), MembersCount: r.u32("members count"), Name: r.name("group name")}
}

// DecodeGroup reads a GetConsumerGroup (or CreateConsumerGroup) payload:
// the header and exactly its members. Empty = no such group.
func DecodeGroup(b []byte) (g Group, ok bool, err error) {
	if len(b) == 0 {
		return g, false, nil
	}
	r := newDecoder("consumer group record", b)
	g = r.groupHeader()
	if r.err == nil && uint64(g.MembersCount)*8 > uint64(r.left()) {
		r.fail("claims %d members in %d bytes", g.MembersCount, r.left())
	}
	for i := uint32(0); r.err == nil && i < g.MembersCount; i++ {
		m := Member{ID: r.u32("member id")}
		m.Partitions = r.u32s(r.u32("member partitions count"), "member partitions")
		g.Members = append(g.Members, m)
	}
	return g, true, r.end()
}

// DecodeGroups reads a GetConsumerGroups payload: headers to the end.
func DecodeGroups(b []byte) ([]Group, error) {
	r := newDecoder("consumer groups", b)
	var out []Group
	for r.err == nil && r.left() > 0 {
		out = append(out, r.groupHeader())
	}
	return out, r.err
}

func (r *decoder) u32s(n uint32, field string) []uint32 {
	if r.err == nil && uint64(n)*4 > uint64(r.left()) {
		r.fail("%s: claims %d entries in %d bytes", field, n, r.left())
	}
	if r.err != nil {
		return nil
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = r.u32(field)
	}
	return out
}

// Assignment is a SyncConsumerGroup reply: the caller's own pollable
// partitions at a group generation.
type Assignment struct {
	Generation uint64
	Partitions []uint32
}

// AppendAssignment appends a.
func AppendAssignment(dst []byte, a *Assignment) []byte {
	dst = le.AppendUint64(dst, a.Generation)
	dst = le.AppendUint32(dst, uint32(len(a.Partitions)))
	for _, p := range a.Partitions {
		dst = le.AppendUint32(dst, p)
	}
	return dst
}

// DecodeAssignment reads a Sync reply; empty = the caller is not a member.
func DecodeAssignment(b []byte) (a Assignment, member bool, err error) {
	if len(b) == 0 {
		return a, false, nil
	}
	r := newDecoder("sync reply", b)
	a.Generation = r.u64("generation")
	a.Partitions = r.u32s(r.u32("partitions count"), "partitions")
	return a, true, r.end()
}

// StoredOffset is a GetConsumerOffset reply.
type StoredOffset struct {
	Partition     uint32
	CurrentOffset uint64
	Stored        uint64
}

// AppendStoredOffset appends o (20 bytes).
func AppendStoredOffset(dst []byte, o *StoredOffset) []byte {
	dst = le.AppendUint32(dst, o.Partition)
	dst = le.AppendUint64(dst, o.CurrentOffset)
	return le.AppendUint64(dst, o.Stored)
}

// DecodeStoredOffset reads a GetConsumerOffset reply; empty = nothing stored.
func DecodeStoredOffset(b []byte) (o StoredOffset, ok bool, err error) {
	if len(b) == 0 {
		return o, false, nil
	}
	r := newDecoder("consumer offset reply", b)
	o = StoredOffset{Partition: r.u32("partition"), CurrentOffset: r.u64("current offset"), Stored: r.u64("stored offset")}
	return o, true, r.end()
}

// Node roles and statuses in cluster metadata.
const (
	RoleLeader     uint8 = 0
	RoleFollower   uint8 = 1
	StatusHealthy  uint8 = 0
	nodeStatusLast uint8 = 5
)

// Node is one node of the cluster metadata.
type Node struct {
	// ReplicaID (0.12) is how partition routes name the node.
	ReplicaID           uint8
	Name, IP            string
	TCP, QUIC, HTTP, WS uint16
	Role, Status        uint8
}

// Cluster is a GetClusterMetadata reply.
type Cluster struct {
	Name  string
	Nodes []Node
}

// AppendCluster appends c.
func AppendCluster(dst []byte, d Dialect, c *Cluster) []byte {
	dst = appendLongString(dst, c.Name)
	dst = le.AppendUint32(dst, uint32(len(c.Nodes)))
	for _, n := range c.Nodes {
		if d >= V012 {
			dst = append(dst, n.ReplicaID)
		}
		dst = appendLongString(dst, n.Name)
		dst = appendLongString(dst, n.IP)
		for _, p := range [...]uint16{n.TCP, n.QUIC, n.HTTP, n.WS} {
			dst = le.AppendUint16(dst, p)
		}
		dst = append(dst, n.Role, n.Status)
	}
	return dst
}

// DecodeCluster reads a GetClusterMetadata reply.
func DecodeCluster(b []byte, d Dialect) (Cluster, error) {
	r := newDecoder("cluster metadata", b)
	c := Cluster{Name: r.longString("cluster name")}
	n := r.u32("nodes count")
	if r.err == nil && uint64(n)*18 > uint64(r.left()) { // the smallest node: empty name and ip
		r.fail("claims %d nodes in %d bytes", n, r.left())
	}
	for i := uint32(0); r.err == nil && i < n; i++ {
		var nd Node
		if d >= V012 {
			nd.ReplicaID = r.u8("replica id")
		}
		nd.Name, nd.IP = r.longString("node name"), r.longString("node ip")
		nd.TCP, nd.QUIC, nd.HTTP, nd.WS = r.u16("tcp port"), r.u16("quic port"), r.u16("http port"), r.u16("websocket port")
		nd.Role, nd.Status = r.u8("role"), r.u8("status")
		if r.err == nil && (nd.Role > RoleFollower || nd.Status > nodeStatusLast) {
			r.fail("node %q: role %d, status %d", nd.Name, nd.Role, nd.Status)
		}
		c.Nodes = append(c.Nodes, nd)
	}
	return c, r.end()
}

// Confirmation is one partition's base offset in a SendMessages reply.
type Confirmation struct {
	StreamID, TopicID, PartitionID uint32
	BaseOffset                     uint64
}

// AppendConfirmations appends a SendMessages reply.
func AppendConfirmations(dst []byte, cs []Confirmation) []byte {
	dst = le.AppendUint32(dst, uint32(len(cs)))
	for _, c := range cs {
		dst = le.AppendUint32(dst, c.StreamID)
		dst = le.AppendUint32(dst, c.TopicID)
		dst = le.AppendUint32(dst, c.PartitionID)
		dst = le.AppendUint64(dst, c.BaseOffset)
	}
	return dst
}

// DecodeConfirmations reads a SendMessages reply; empty = a duplicate.
func DecodeConfirmations(b []byte) ([]Confirmation, error) {
	if len(b) == 0 {
		return nil, nil
	}
	r := newDecoder("send reply", b)
	n := r.u32("confirmations count")
	if r.err == nil && uint64(n)*20 != uint64(r.left()) {
		r.fail("claims %d confirmations in %d bytes", n, r.left())
	}
	var out []Confirmation
	for i := uint32(0); r.err == nil && i < n; i++ {
		out = append(out, Confirmation{StreamID: r.u32("stream id"), TopicID: r.u32("topic id"), PartitionID: r.u32("partition id"), BaseOffset: r.u64("base offset")})
	}
	return out, r.end()
}

// Route (0.12) is a GetPartitionRoute reply: which replica is the
// partition's primary. 0.12 dev layout, 25 bytes.
type Route struct {
	Incarnation     uint64
	MetadataOp      uint64
	View            uint32
	PartitionsCount uint32
	PrimaryReplica  uint8
}

// AppendRoute appends r.
func AppendRoute(dst []byte, r *Route) []byte {
	dst = le.AppendUint64(dst, r.Incarnation)
	dst = le.AppendUint64(dst, r.MetadataOp)
	dst = le.AppendUint32(dst, r.View)
	dst = le.AppendUint32(dst, r.PartitionsCount)
	return append(dst, r.PrimaryReplica)
}

// DecodeRoute reads a GetPartitionRoute reply.
func DecodeRoute(b []byte) (Route, error) {
	r := newDecoder("partition route", b)
	rt := Route{Incarnation: r.u64("incarnation"), MetadataOp: r.u64("metadata op"), View: r.u32("view"), PartitionsCount: r.u32("partitions count"), PrimaryReplica: r.u8("primary replica")}
	return rt, r.end()
}

// AppendRouteRequest appends a GetPartitionRoute (0.12) body:
// [stream][topic][partition_id:u32].
func AppendRouteRequest(dst []byte, stream, topic Identifier, partition uint32) []byte {
	return le.AppendUint32(AppendTopicRef(dst, stream, topic), partition)
}

// DecodeRouteRequest reads a GetPartitionRoute body.
func DecodeRouteRequest(body []byte) (stream, topic Identifier, partition uint32, err error) {
	r := newDecoder("partition route request", body)
	stream, topic, partition = r.identifier("stream"), r.identifier("topic"), r.u32("partition id")
	return stream, topic, partition, r.end()
}

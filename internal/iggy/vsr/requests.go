package vsr

import "fmt"

// Login is a LoginRegister (code 40) or LoginRegisterWithPat (code 45)
// body: the client's version info, then credentials.
type Login struct {
	Version    Version
	SDKName    string
	SDKVersion string
	// PAT selects the token login; Username and Password are used otherwise.
	PAT                bool
	Username, Password string
	Token              string
	// BindSecret (0.12) binds the session: later connections can attach
	// to it with it (BIND_SESSION). 0.12 dev layout: 32 bytes after the
	// version info.
	BindSecret [32]byte
	Context    []byte
}

// AppendLogin appends l's body for dialect d.
func AppendLogin(dst []byte, d Dialect, l *Login) []byte {
	dst = le.AppendUint32(dst, uint32(l.Version))
	dst = appendName(dst, l.SDKName)
	dst = appendName(dst, l.SDKVersion)
	if d >= V012 {
		dst = append(dst, l.BindSecret[:]...)
	}
	if l.PAT {
		dst = appendName(dst, l.Token)
	} else {
		dst = appendName(dst, l.Username)
		dst = appendName(dst, l.Password)
	}
	dst = le.AppendUint32(dst, uint32(len(l.Context)))
	return append(dst, l.Context...)
}

// LoginVersion reads the protocol version a login body starts with.
func LoginVersion(body []byte) (Version, error) {
	if len(body) < 4 {
		return 0, malformed("login", "%d bytes, no protocol version", len(body))
	}
	return Version(le.Uint32(body)), nil
}

// DecodeLogin reads a login body in dialect d. The body's shape tells a
// password login from a token login (the header carries no code).
func DecodeLogin(body []byte, d Dialect) (Login, error) {
	if l, err := decodeLogin(body, d, false); err == nil {
		return l, nil
	}
	return decodeLogin(body, d, true)
}

func decodeLogin(body []byte, d Dialect, pat bool) (Login, error) {
	r := newDecoder("login", body)
	l := Login{PAT: pat}
	l.Version = Version(r.u32("protocol version"))
	l.SDKName = r.name("sdk name")
	l.SDKVersion = r.name("sdk version")
	if d >= V012 {
		copy(l.BindSecret[:], r.bytes(32, "bind secret"))
	}
	if pat {
		l.Token = r.name("token")
	} else {
		l.Username = r.name("username")
		l.Password = r.name("password")
	}
	l.Context = r.block("context")
	return l, r.end()
}

// Strategy kinds of a poll.
const (
	StrategyOffset    uint8 = 1
	StrategyTimestamp uint8 = 2
	StrategyFirst     uint8 = 3
	StrategyLast      uint8 = 4
	StrategyNext      uint8 = 5
)

// Strategy says where a poll starts.
type Strategy struct {
	Kind  uint8
	Value uint64
}

// AtOffset starts a poll at offset.
func AtOffset(offset uint64) Strategy { return Strategy{Kind: StrategyOffset, Value: offset} }

// Poll is a PollMessages (100) body.
type Poll struct {
	Consumer   Consumer
	Stream     Identifier
	Topic      Identifier
	Partition  OptionalPartition
	Strategy   Strategy
	Count      uint32
	AutoCommit bool
}

// AppendPoll appends p's body.
func AppendPoll(dst []byte, p *Poll) []byte {
	dst = appendConsumer(dst, p.Consumer)
	dst = AppendIdentifier(dst, p.Stream)
	dst = AppendIdentifier(dst, p.Topic)
	dst = appendOptionalPartition(dst, p.Partition)
	dst = append(dst, p.Strategy.Kind)
	dst = le.AppendUint64(dst, p.Strategy.Value)
	dst = le.AppendUint32(dst, p.Count)
	return append(dst, boolByte(p.AutoCommit))
}

// DecodePoll reads a PollMessages body.
func DecodePoll(body []byte) (Poll, error) {
	r := newDecoder("poll request", body)
	p := Poll{Consumer: r.consumer(), Stream: r.identifier("stream"), Topic: r.identifier("topic")}
	p.Partition = r.optionalPartition()
	p.Strategy.Kind = r.u8("strategy kind")
	p.Strategy.Value = r.u64("strategy value")
	p.Count = r.u32("count")
	ac := r.u8("auto commit")
	p.AutoCommit = ac == 1
	if r.err == nil && (p.Strategy.Kind < StrategyOffset || p.Strategy.Kind > StrategyNext) {
		r.fail("strategy kind %d (want 1..5)", p.Strategy.Kind)
	}
	if r.err == nil && ac > 1 {
		r.fail("auto commit %d (want 0 or 1)", ac)
	}
	return p, r.end()
}

// Ack levels of offset writes.
const (
	AckNone   uint8 = 0
	AckQuorum uint8 = 1
)

// Offset is a Get/Store/DeleteConsumerOffset (120/121/122) body. Offset
// is used by Store only, Ack by Store and Delete.
type Offset struct {
	Consumer  Consumer
	Stream    Identifier
	Topic     Identifier
	Partition OptionalPartition
	Offset    uint64
	Ack       uint8
}

// AppendOffset appends o's body for the command code.
func AppendOffset(dst []byte, code uint32, o *Offset) []byte {
	dst = appendConsumer(dst, o.Consumer)
	dst = AppendIdentifier(dst, o.Stream)
	dst = AppendIdentifier(dst, o.Topic)
	dst = appendOptionalPartition(dst, o.Partition)
	switch code {
	case CodeStoreOffset:
		dst = le.AppendUint64(dst, o.Offset)
		dst = append(dst, o.Ack)
	case CodeDeleteOffset:
		dst = append(dst, o.Ack)
	}
	return dst
}

// DecodeOffset reads an offset request body of the command code.
func DecodeOffset(body []byte, code uint32) (Offset, error) {
	r := newDecoder("consumer offset request", body)
	o := Offset{Consumer: r.consumer(), Stream: r.identifier("stream"), Topic: r.identifier("topic")}
	o.Partition = r.optionalPartition()
	switch code {
	case CodeStoreOffset:
		o.Offset = r.u64("offset")
		o.Ack = r.u8("ack level")
	case CodeDeleteOffset:
		o.Ack = r.u8("ack level")
	}
	if r.err == nil && o.Ack > AckQuorum {
		r.fail("ack level %d (want 0 or 1)", o.Ack)
	}
	return o, r.end()
}

// GroupRef names a consumer group: the body of GetConsumerGroup, Join,
// Leave and Sync.
type GroupRef struct{ Stream, Topic, Group Identifier }

// AppendGroupRef appends g.
func AppendGroupRef(dst []byte, g GroupRef) []byte {
	dst = AppendIdentifier(dst, g.Stream)
	dst = AppendIdentifier(dst, g.Topic)
	return AppendIdentifier(dst, g.Group)
}

// DecodeGroupRef reads a group reference body.
func DecodeGroupRef(body []byte) (GroupRef, error) {
	r := newDecoder("consumer group request", body)
	g := GroupRef{Stream: r.identifier("stream"), Topic: r.identifier("topic"), Group: r.identifier("group")}
	return g, r.end()
}

// AppendTopicRef appends [stream][topic] (GetTopic, GetConsumerGroups).
func AppendTopicRef(dst []byte, stream, topic Identifier) []byte {
	return AppendIdentifier(AppendIdentifier(dst, stream), topic)
}

// DecodeTopicRef reads [stream][topic].
func DecodeTopicRef(body []byte) (stream, topic Identifier, err error) {
	r := newDecoder("topic request", body)
	stream, topic = r.identifier("stream"), r.identifier("topic")
	return stream, topic, r.end()
}

// DecodeStreamRef reads a GetStream body.
func DecodeStreamRef(body []byte) (Identifier, error) {
	r := newDecoder("stream request", body)
	s := r.identifier("stream")
	return s, r.end()
}

// AppendCreateGroup appends a CreateConsumerGroup body.
func AppendCreateGroup(dst []byte, stream, topic Identifier, name string) []byte {
	return appendName(AppendTopicRef(dst, stream, topic), name)
}

// DecodeCreateGroup reads a CreateConsumerGroup body.
func DecodeCreateGroup(body []byte) (stream, topic Identifier, name string, err error) {
	r := newDecoder("create consumer group request", body)
	stream, topic, name = r.identifier("stream"), r.identifier("topic"), r.name("group name")
	return stream, topic, name, r.end()
}

// AppendCreateStream appends a CreateStream body.
func AppendCreateStream(dst []byte, name string, opts []Option) []byte {
	return AppendOptions(appendName(dst, name), opts)
}

// DecodeCreateStream reads a CreateStream body.
func DecodeCreateStream(body []byte) (name string, opts []Option, err error) {
	r := newDecoder("create stream request", body)
	name = r.name("stream name")
	if r.err != nil {
		return "", nil, r.err
	}
	opts, err = ParseOptions(body[r.off:])
	return name, opts, err
}

// CreateTopic is a CreateTopic (302) body; settings are options.
type CreateTopic struct {
	Stream     Identifier
	Partitions uint32
	Name       string
	Options    []Option
}

// AppendCreateTopic appends t's body.
func AppendCreateTopic(dst []byte, t *CreateTopic) []byte {
	dst = AppendIdentifier(dst, t.Stream)
	dst = le.AppendUint32(dst, t.Partitions)
	dst = appendName(dst, t.Name)
	return AppendOptions(dst, t.Options)
}

// DecodeCreateTopic reads a CreateTopic body.
func DecodeCreateTopic(body []byte) (CreateTopic, error) {
	r := newDecoder("create topic request", body)
	t := CreateTopic{Stream: r.identifier("stream"), Partitions: r.u32("partitions count"), Name: r.name("topic name")}
	if r.err != nil {
		return t, r.err
	}
	var err error
	t.Options, err = ParseOptions(body[r.off:])
	return t, err
}

// Partitioning kinds of SendMessages.
const (
	PartitioningBalanced  uint8 = 1
	PartitioningPartition uint8 = 2
	PartitioningKey       uint8 = 3
)

// Send is a SendMessages (101) body: where the messages go and one batch.
type Send struct {
	Stream, Topic Identifier
	Partitioning  uint8
	// Key is the partitioning value: the u32 partition id for
	// PartitioningPartition, the key for PartitioningKey.
	Key   []byte
	Count uint32
	// Batch is one batch record (see AppendBatch).
	Batch []byte
}

// ToPartition is the partitioning value of partition id.
func ToPartition(id uint32) []byte { return le.AppendUint32(nil, id) }

// AppendSend appends s's body; s.Batch must be a sealed batch.
func AppendSend(dst []byte, s *Send) []byte {
	lenAt := len(dst)
	dst = le.AppendUint32(dst, 0)
	start := len(dst)
	dst = AppendTopicRef(dst, s.Stream, s.Topic)
	dst = append(dst, s.Partitioning, byte(len(s.Key)))
	dst = append(dst, s.Key...)
	dst = le.AppendUint32(dst, s.Count)
	le.PutUint32(dst[lenAt:], uint32(len(dst)-start))
	return append(dst, s.Batch...)
}

// DecodeSend reads a SendMessages body and checks its batch (see CheckBatch).
func DecodeSend(body []byte, d Dialect) (Send, error) {
	r := newDecoder("send request", body)
	metaLen := r.u32("metadata length")
	start := r.off
	s := Send{Stream: r.identifier("stream"), Topic: r.identifier("topic")}
	s.Partitioning = r.u8("partitioning kind")
	s.Key = r.bytes(int(r.u8("partitioning length")), "partitioning value")
	s.Count = r.u32("messages count")
	if r.err != nil {
		return s, r.err
	}
	if uint64(r.off-start) != uint64(metaLen) {
		return s, malformed("send request", "metadata length %d, but the metadata is %d bytes", metaLen, r.off-start)
	}
	switch {
	case s.Partitioning == PartitioningBalanced && len(s.Key) == 0,
		s.Partitioning == PartitioningPartition && len(s.Key) == 4,
		s.Partitioning == PartitioningKey && len(s.Key) > 0:
	default:
		return s, malformed("send request", "partitioning kind %d with a %d-byte value", s.Partitioning, len(s.Key))
	}
	s.Batch = body[r.off:]
	h, err := CheckBatch(s.Batch, d)
	if err != nil {
		return s, err
	}
	if h.Length != uint64(len(s.Batch)) {
		return s, malformed("send request", "batch of %d bytes followed by %d more", h.Length, uint64(len(s.Batch))-h.Length)
	}
	if h.Count != s.Count {
		return s, malformed("send request", "messages count %d, but the batch holds %d", s.Count, h.Count)
	}
	return s, nil
}

// BindSession (0.12, code 15, NonReplicated) attaches a connection to a
// session logged in on another: the login's version info, then the
// session's identity. 0.12 dev layout. The reply is a LoginReply without
// a result section.
type BindSession struct {
	Version           Version
	SDKName           string
	SDKVersion        string
	Client            U128
	Session           uint64
	MetadataWatermark uint64
	BindSecret        [32]byte
}

// AppendBindSession appends b's body.
func AppendBindSession(dst []byte, b *BindSession) []byte {
	dst = le.AppendUint32(dst, uint32(b.Version))
	dst = appendName(dst, b.SDKName)
	dst = appendName(dst, b.SDKVersion)
	dst = append(dst, b.Client[:]...)
	dst = le.AppendUint64(dst, b.Session)
	dst = le.AppendUint64(dst, b.MetadataWatermark)
	return append(dst, b.BindSecret[:]...)
}

// DecodeBindSession reads a BindSession body.
func DecodeBindSession(body []byte) (BindSession, error) {
	r := newDecoder("bind session", body)
	b := BindSession{Version: Version(r.u32("protocol version")), SDKName: r.name("sdk name"), SDKVersion: r.name("sdk version")}
	copy(b.Client[:], r.bytes(16, "client id"))
	b.Session, b.MetadataWatermark = r.u64("session"), r.u64("metadata watermark")
	copy(b.BindSecret[:], r.bytes(32, "bind secret"))
	return b, r.end()
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// CodeName names a command code for messages ("poll messages").
func CodeName(code uint32) string {
	switch code {
	case CodePing:
		return "ping"
	case CodeClusterMetadata:
		return "get cluster metadata"
	case CodeBindSession:
		return "bind session"
	case CodeLogout:
		return "logout"
	case CodeLogin:
		return "login"
	case CodeLoginPAT:
		return "login with token"
	case CodePoll:
		return "poll messages"
	case CodeSend:
		return "send messages"
	case CodePartitionRoute:
		return "get partition route"
	case CodeGetOffset:
		return "get consumer offset"
	case CodeStoreOffset:
		return "store consumer offset"
	case CodeDeleteOffset:
		return "delete consumer offset"
	case CodeGetStream:
		return "get stream"
	case CodeCreateStream:
		return "create stream"
	case CodeGetTopic:
		return "get topic"
	case CodeDeleteStream:
		return "delete stream"
	case CodeDeleteTopic:
		return "delete topic"
	case CodeCreateTopic:
		return "create topic"
	case CodeGetGroup:
		return "get consumer group"
	case CodeGetGroups:
		return "get consumer groups"
	case CodeCreateGroup:
		return "create consumer group"
	case CodeJoinGroup:
		return "join consumer group"
	case CodeLeaveGroup:
		return "leave consumer group"
	case CodeSyncGroup:
		return "sync consumer group"
	}
	return fmt.Sprintf("command %d", code)
}

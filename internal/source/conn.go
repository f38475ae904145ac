package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggyref"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsrconn"
)

// Protocols iggy.protocol accepts.
const (
	ProtocolAuto = "auto"
	Protocol08   = "0.8"
	Protocol09   = "0.9"
	Protocol010  = "0.10"
)

// Protocols lists the accepted iggy.protocol values.
var Protocols = []string{ProtocolAuto, Protocol08, Protocol09, Protocol010}

// Config says where the Iggy server is, which protocol it speaks and how
// to log in. Token, when set, wins over Username/Password.
type Config struct {
	Address  string
	Username string
	Password string
	Token    string
	// Protocol is the Iggy release whose wire protocol to speak: "0.8"
	// (legacy framing, through the Go SDK v0.8.0), "0.9" (protocol 0.11.0),
	// "0.10" (protocol 0.12.0), or "auto"/"" (find out within
	// ConnectTimeout, at most one extra round trip).
	Protocol       string
	TLS            bool
	TLSCAFile      string
	TLSDomain      string
	ConnectTimeout time.Duration
	// RequestTimeout bounds the wait for each reply (0 = only the caller's
	// context); past it the connection is cut.
	RequestTimeout time.Duration
	// Keepalive (0.9/0.10) is how long the connection may stay silent
	// before a ping (default 10 s): a 0.9 server evicts a group member
	// silent for 36 s.
	Keepalive time.Duration
	// MaxPollReply (0.9/0.10) is the largest poll reply taken in, in bytes
	// (0: the protocol's frame limit, 64 MiB): a poll answered with more
	// fails with *PollTooLargeError, the connection kept, so the caller can
	// ask for fewer messages. On 0.8 the SDK reads whatever comes.
	MaxPollReply uint32
}

// PollTooLargeError is a poll whose reply was larger than
// Config.MaxPollReply: nothing of it was kept but what its start says of
// its first message (when Peeked).
type PollTooLargeError struct {
	Size, Limit uint32
	// Peeked is set when the reply's start was read: Count messages, the
	// first at Offset, with server time Timestamp and MessageSize bytes of
	// payload and user headers.
	Peeked                         bool
	Count                          uint32
	Offset, Timestamp, MessageSize uint64
}

func (e *PollTooLargeError) Error() string {
	if e.Peeked {
		return fmt.Sprintf("the reply of %d bytes (%d messages, the first at offset %d of %d bytes) is larger than the %d bytes a poll may take in",
			e.Size, e.Count, e.Offset, e.MessageSize, e.Limit)
	}
	return fmt.Sprintf("the reply of %d bytes is larger than the %d bytes a poll may take in", e.Size, e.Limit)
}

// Conn is one logged-in connection, of whichever protocol the server
// speaks. Calls are serialised; each has a deadline: when a call outlives
// its context the connection is cut and every later call fails with
// ErrConnectionLost.
type Conn struct {
	cfg    Config
	b      backend
	speaks string // "Iggy 0.9 (protocol 0.11.0)"

	mu      sync.Mutex
	streams map[string]streamInfo // by configured value
	topics  map[[3]string]*Topic  // by configured stream, topic and group
}

// backend is one protocol's client. Errors of remote calls are returned
// as they come; Conn adds what was asked.
type backend interface {
	// stream and topic report found=false for a stream or topic the
	// server does not have.
	stream(ctx context.Context, ref iggyref.Ref) (st streamInfo, found bool, err error)
	topic(ctx context.Context, streamID uint32, ref iggyref.Ref) (tp topicInfo, found bool, err error)
	// join creates the group when it is missing and joins it; leave is
	// no error for a non-member.
	join(ctx context.Context, t *Topic) error
	leave(ctx context.Context, t *Topic) error
	members(ctx context.Context, t *Topic) (ms []Member, found bool, err error)
	// owns says whether partition p, whose newest offset is newest, is
	// this member's now.
	owns(ctx context.Context, t *Topic, p uint32, newest uint64) (bool, error)
	poll(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32, dst []batch.Message, buf *[]byte) ([]batch.Message, bool, error)
	storedOffset(ctx context.Context, t *Topic, p uint32) (uint64, bool, error)
	storeOffset(ctx context.Context, t *Topic, p uint32, offset uint64) error
	// send appends msgs to partition p as one batch; known reports that
	// the server said at which offset the first landed.
	send(ctx context.Context, t *Topic, p uint32, msgs []Outgoing) (first uint64, known bool, err error)
	// read polls as a plain consumer; createTopic creates the stream too
	// when it is missing.
	read(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32) ([]batch.Message, error)
	createTopic(ctx context.Context, stream, topic string, partitions uint32) error
	lost() bool
	close()
}

// topicInfo is a resolved topic as a backend reports it.
type topicInfo struct {
	id         uint32
	name       string
	partitions []PartitionInfo
}

// Open dials (bounded by ConnectTimeout), finds or checks the protocol,
// logs in, and returns the connection.
func Open(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Address == "" {
		return nil, errors.New("iggy: no server address configured (iggy.address / IGGY_ADDRESS)")
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	dialect, err := dialectOf(cfg.Protocol)
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if cfg.TLS {
		if tlsCfg, err = clientTLS(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Protocol == Protocol08 {
		return openLegacy(ctx, cfg, tlsCfg)
	}
	c, err := openVSR(ctx, cfg, tlsCfg, dialect)
	var legacy *vsrconn.LegacyServerError
	if errors.As(err, &legacy) {
		// auto, and the server is an Iggy 0.8: its own client, on a new
		// connection (that one answered a frame it could not parse).
		return openLegacy(ctx, cfg, tlsCfg)
	}
	return c, err
}

// dialectOf reads iggy.protocol: 0 for auto (and for 0.8, which does not
// use the VSR client).
func dialectOf(p string) (vsr.Dialect, error) {
	switch p {
	case "", ProtocolAuto, Protocol08:
		return 0, nil
	case Protocol09:
		return vsr.V011, nil
	case Protocol010:
		return vsr.V012, nil
	}
	return 0, fmt.Errorf("iggy.protocol (IGGY_PROTOCOL) = %q: accepted are %s", p, strings.Join(Protocols, ", "))
}

func newConn(cfg Config, b backend, speaks string) *Conn {
	return &Conn{cfg: cfg, b: b, speaks: speaks}
}

// Speaks says which Iggy release and protocol the connection speaks, e.g.
// "Iggy 0.9 (protocol 0.11.0)".
func (c *Conn) Speaks() string { return c.speaks }

// Close ends the session; the server drops this connection's group
// memberships with it.
func (c *Conn) Close() error {
	c.b.close()
	return nil
}

// Lost reports whether the connection is unusable.
func (c *Conn) Lost() bool { return c.b.lost() }

func clientTLS(cfg Config) (*tls.Config, error) {
	tc := &tls.Config{ServerName: tlsServerName(cfg.Address, cfg.TLSDomain), MinVersion: tls.VersionTLS12}
	if cfg.TLSCAFile != "" {
		pem, err := os.ReadFile(cfg.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("iggy: read TLS CA file (iggy.tls_ca_file) %q: %w", cfg.TLSCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("iggy: TLS CA file (iggy.tls_ca_file) %q holds no PEM certificate", cfg.TLSCAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// who names the login's identity for messages, never its secret.
func who(cfg Config) string {
	if cfg.Token != "" {
		return "a personal access token"
	}
	return fmt.Sprintf("user %q", cfg.Username)
}

// Errors of a connection; check with errors.Is. Both clients wrap them.
var (
	// ErrUnreachable reports that the Iggy server could not be reached.
	ErrUnreachable = vsrconn.ErrUnreachable
	// ErrConnectionLost reports that the connection broke or was cut by a deadline.
	ErrConnectionLost = vsrconn.ErrConnectionLost
	// ErrTimeout reports a reply that did not come within RequestTimeout.
	ErrTimeout = vsrconn.ErrTimeout
	// ErrMalformedReply reports a reply that could not be decoded; the
	// connection is cut.
	ErrMalformedReply = vsrconn.ErrMalformedReply
	// ErrProtocolMismatch reports a server that speaks another protocol
	// than iggy.protocol names.
	ErrProtocolMismatch = vsrconn.ErrProtocolMismatch
	// ErrEvicted reports a session the server ended.
	ErrEvicted = vsrconn.ErrEvicted
	// ErrLoginRefused reports credentials the server refused (a wrong
	// user name, password or token, an inactive user), in any protocol.
	// The error names the identity, never the secret; the caller knows
	// which settings hold the credentials.
	ErrLoginRefused = vsrconn.ErrLoginRefused
)

// ErrNotOwner reports that this member does not (or no longer) own the
// partition: Iggy refused an offset store or a poll because the partition
// belongs to another member (or is being handed over), or the caller is not
// a member.
var ErrNotOwner = errors.New("partition not owned by this consumer group member")

// ErrHistoryChanged reports a partition that was deleted and re-created
// on the server while this connection read it (Iggy 0.10's incarnation no
// longer matches): read it anew in the next run.
var ErrHistoryChanged = errors.New("the partition was re-created on the server (its incarnation changed)")

package iggytest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// Broker is an in-process Iggy server of releases 0.8.0, 0.9 and 0.10 (see WithProtocol). All methods are safe for concurrent use.
type Broker struct {
	cfg config
	ln  net.Listener

	mu          sync.Mutex // guards streams and everything reachable from them
	streams     []*stream
	nextSession atomic.Uint32
	// incarnations and metaOp count created partitions and metadata changes
	// (0.10 partition contexts); guarded by mu.
	incarnations uint64
	metaOp       uint64

	hooksMu     sync.Mutex
	failRules   map[uint32]*failRule
	closeOn     map[uint32]int
	closeAfter  map[uint32]int
	closeAfterN atomic.Int64
	delay       atomic.Int64

	// VSR sessions by client id, the session-number counter, the cluster
	// roster and the offset-store record; guarded by mu.
	sessions      map[vsr.U128]*session
	nextSessionNo uint64
	cluster       []vsr.Node
	stores        []OffsetStore
	onStore       func(OffsetStore)

	connMu sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

type failRule struct {
	status uint32
	times  int
}

type config struct {
	addr             string
	users            map[string]string
	tokens           map[string]bool
	tls              *tls.Config
	log              *slog.Logger
	rebalanceTimeout time.Duration
	protocol         string
	heartbeat        time.Duration
	replicaID        uint8
}

// Option configures Start.
type Option func(*config)

// WithAddr listens on addr instead of 127.0.0.1:0.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithUser replaces the default iggy/iggy account (user id 0).
func WithUser(username, password string) Option {
	return func(c *config) { c.users = map[string]string{username: password} }
}

// WithToken adds a personal access token accepted by LoginWithPersonalAccessToken.
func WithToken(token string) Option { return func(c *config) { c.tokens[token] = true } }

// WithTLS serves TLS with cfg.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithLogger logs connection and request events to l (default: discard).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithRebalanceTimeout sets how long a pending partition hand-over may wait for the
// old owner's commit (0.8's consumer_group.rebalancing_timeout, default 30 s).
func WithRebalanceTimeout(d time.Duration) Option { return func(c *config) { c.rebalanceTimeout = d } }

// Protocols WithProtocol accepts.
const (
	// ProtocolAny serves each connection in the protocol it speaks: a
	// legacy 0.8 frame or a VSR header, and for VSR the dialect its login
	// version names (0.11.x → Iggy 0.9, 0.12.x → Iggy 0.10).
	ProtocolAny = ""
	Protocol08  = "0.8"
	Protocol09  = "0.9"
	Protocol010 = "0.10"
)

// WithProtocol pins the broker to one server release: "0.8" (legacy framing
// only: a VSR header is answered as a 0.8 server does, InvalidCommand),
// "0.9" (VSR only, protocol 0.11 login gate), "0.10" (VSR only, protocol
// 0.12.0 exactly), or "" (the default: whatever each connection speaks).
func WithProtocol(p string) Option { return func(c *config) { c.protocol = p } }

// WithHeartbeat sets the VSR heartbeat interval (default 30 s, as the 0.9
// server's [heartbeat] interval; 0 turns it off): a session that holds a
// consumer-group membership and sends nothing for 1.2 × d is evicted with
// reason 13 (StaleClient), leaves its groups and loses its connection.
func WithHeartbeat(d time.Duration) Option { return func(c *config) { c.heartbeat = max(d, 0) } }

// WithReplicaID sets the replica id this broker has in 0.10 cluster
// metadata and partition routes (default 0).
func WithReplicaID(id uint8) Option { return func(c *config) { c.replicaID = id } }

// Start listens (on 127.0.0.1:0 unless WithAddr) and serves until Close.
func Start(opts ...Option) (*Broker, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	switch cfg.protocol {
	case ProtocolAny, Protocol08, Protocol09, Protocol010:
	default:
		return nil, fmt.Errorf("iggytest: protocol %q: want \"0.8\", \"0.9\", \"0.10\" or \"\" (any)", cfg.protocol)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("iggytest: listen on %s: %w", cfg.addr, err)
	}
	if cfg.tls != nil {
		ln = tls.NewListener(ln, cfg.tls)
	}
	b := newBroker(cfg)
	b.ln = ln
	b.wg.Add(1)
	go b.accept()
	if cfg.heartbeat > 0 && cfg.protocol != Protocol08 {
		b.wg.Add(1)
		go b.heartbeatLoop()
	}
	cfg.log.Info("iggytest broker listening", "addr", ln.Addr().String(), "tls", cfg.tls != nil, "protocol", cfg.protocol)
	return b, nil
}

func defaultConfig() config {
	return config{
		addr:             "127.0.0.1:0",
		users:            map[string]string{"iggy": "iggy"},
		tokens:           map[string]bool{},
		log:              slog.New(slog.DiscardHandler),
		rebalanceTimeout: groupRebalanceTimeoutDefault * time.Second,
		heartbeat:        heartbeatDefault,
	}
}

func newBroker(cfg config) *Broker {
	return &Broker{
		cfg:        cfg,
		failRules:  map[uint32]*failRule{},
		closeOn:    map[uint32]int{},
		closeAfter: map[uint32]int{},
		conns:      map[*conn]struct{}{},
		sessions:   map[vsr.U128]*session{},
		done:       make(chan struct{}),
	}
}

// Addr is the host:port the broker listens on.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

func (b *Broker) hostPort() (string, uint16) {
	if b.ln == nil {
		return "127.0.0.1", 0
	}
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil {
		return "127.0.0.1", 0
	}
	p, _ := strconv.ParseUint(port, 10, 16)
	return host, uint16(p)
}

// Close stops accepting, closes every connection and waits for all goroutines.
func (b *Broker) Close() error {
	b.connMu.Lock()
	if b.closed {
		b.connMu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	for c := range b.conns {
		_ = c.nc.Close()
	}
	b.connMu.Unlock()
	err := b.ln.Close()
	b.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (b *Broker) accept() {
	defer b.wg.Done()
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			select {
			case <-b.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			b.cfg.log.Warn("iggytest accept failed", "err", err)
			return
		}
		c := &conn{b: b, nc: nc, sess: &session{id: b.nextSession.Add(1)}, budget: int(b.closeAfterN.Load()), done: make(chan struct{})}
		b.connMu.Lock()
		if b.closed {
			b.connMu.Unlock()
			_ = nc.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.connMu.Unlock()
		go func() {
			defer b.wg.Done()
			c.serve()
		}()
	}
}

// Connections is the number of live client connections.
func (b *Broker) Connections() int {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	return len(b.conns)
}

// DropConnections closes every live client connection, as a server does
// when clients' TCP connections die: their group memberships go with them,
// before it returns (so a client that logs in next sees the groups without
// them). It returns how many it closed.
func (b *Broker) DropConnections() int {
	b.connMu.Lock()
	dropped := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		_ = c.nc.Close()
		dropped = append(dropped, c)
	}
	b.connMu.Unlock()
	// A connection's own goroutine drops its memberships once its read
	// fails; wait for that, bounded so a handler held in a reply delay
	// cannot hang the caller.
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for _, c := range dropped {
		select {
		case <-c.done:
		case <-deadline.C:
			b.cfg.log.Warn("iggytest connection still cleaning up after DropConnections", "client", c.sess.id)
			return len(dropped)
		}
	}
	return len(dropped)
}

// dropSession removes a closed connection from every consumer group, rebalancing as
// 0.8 does on client cleanup.
func (b *Broker) dropSession(s *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leaveAllLocked(s)
}

// leaveAllLocked removes s from every consumer group (full rebalance); b.mu held.
func (b *Broker) leaveAllLocked(s *session) {
	for _, st := range b.streams {
		if st == nil {
			continue
		}
		for _, t := range st.topics {
			if t == nil {
				continue
			}
			for _, g := range t.groups {
				if g != nil {
					g.leave(s, len(t.partitions))
				}
			}
		}
	}
}

// FailCommand makes the next times requests with code fail with status.
func (b *Broker) FailCommand(code uint32, status uint32, times int) {
	b.hooksMu.Lock()
	defer b.hooksMu.Unlock()
	if times <= 0 {
		delete(b.failRules, code)
		return
	}
	b.failRules[code] = &failRule{status: status, times: times}
}

// CloseAfter closes every connection accepted from now on after it served n requests
// (0 = off).
func (b *Broker) CloseAfter(n int) { b.closeAfterN.Store(int64(max(n, 0))) }

// CloseOnCommand closes the connection instead of executing and answering the next
// times requests with code.
func (b *Broker) CloseOnCommand(code uint32, times int) {
	b.hooksMu.Lock()
	defer b.hooksMu.Unlock()
	b.closeOn[code] = max(times, 0)
}

// CloseAfterCommand executes the next times requests with code, then closes the
// connection without answering (the client cannot tell whether it took effect).
func (b *Broker) CloseAfterCommand(code uint32, times int) {
	b.hooksMu.Lock()
	defer b.hooksMu.Unlock()
	b.closeAfter[code] = max(times, 0)
}

// DelayReplies delays every reply by d (0 = off).
func (b *Broker) DelayReplies(d time.Duration) { b.delay.Store(int64(max(d, 0))) }

type hookAction int

const (
	hookNone hookAction = iota
	hookFail
	hookCloseBefore
	hookCloseAfter
)

// takeHook consumes one use of the fault hook matching code, if any.
func (b *Broker) takeHook(code uint32) (hookAction, uint32) {
	b.hooksMu.Lock()
	defer b.hooksMu.Unlock()
	if n := b.closeOn[code]; n > 0 {
		b.closeOn[code] = n - 1
		return hookCloseBefore, 0
	}
	if r := b.failRules[code]; r != nil {
		r.times--
		if r.times <= 0 {
			delete(b.failRules, code)
		}
		return hookFail, r.status
	}
	if n := b.closeAfter[code]; n > 0 {
		b.closeAfter[code] = n - 1
		return hookCloseAfter, 0
	}
	return hookNone, 0
}

func randomID(dst []byte) {
	for {
		for i := 0; i < len(dst); i += 8 {
			v := rand.Uint64()
			for j := 0; j < 8 && i+j < len(dst); j++ {
				dst[i+j] = byte(v >> (8 * j))
			}
		}
		if !isZero(dst) {
			return
		}
	}
}

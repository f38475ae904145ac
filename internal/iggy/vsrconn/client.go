package vsrconn

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// Config says where the server is and how to log in.
type Config struct {
	// Address is the server's TCP address, host:port.
	Address string
	// Token, when set, logs in with a personal access token; Username and
	// Password otherwise.
	Username, Password, Token string
	// TLS, when set, wraps every connection (the primary and any routed
	// one) in TLS with this configuration. TLSDomain, when set, is the
	// server name every node's certificate must carry; otherwise a routed
	// node's must carry the host the cluster metadata gives for it.
	TLS       *tls.Config
	TLSDomain string
	// Dialect is the protocol to speak; 0 detects it: a 0.11.0 login, and
	// once more in the server's protocol when it evicts that login as an
	// incompatible version.
	Dialect vsr.Dialect
	// ConnectTimeout bounds dialing, TLS and login (default 5 s).
	ConnectTimeout time.Duration
	// RequestTimeout bounds each later request (0 = only the caller's
	// context); past it the connection is cut.
	RequestTimeout time.Duration
	// Keepalive is how long a connection may send nothing before a ping
	// goes out (default 10 s; negative: never). A 0.9 server evicts a
	// group member silent for 36 s.
	Keepalive time.Duration
	// MaxReply is the largest reply kept, checked before its body is read
	// (default 64 MiB, the server's frame limit): a larger reply is read
	// past and answered with *ReplyTooLargeError, the connection kept.
	MaxReply uint32
	// SDKName and SDKVersion identify the client at login (default
	// "iggy-s3-sink", "1").
	SDKName, SDKVersion string
}

func (cfg *Config) defaults() {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.Keepalive == 0 {
		cfg.Keepalive = 10 * time.Second
	}
	if cfg.MaxReply == 0 {
		cfg.MaxReply = vsr.MaxFrameSize
	}
	if cfg.SDKName == "" {
		cfg.SDKName = "iggy-s3-sink"
	}
	if cfg.SDKVersion == "" {
		cfg.SDKVersion = "1"
	}
}

// Client is one logged-in session: its primary connection and, in a 0.10
// cluster, connections to the partitions' primaries bound to the same
// session. Calls are safe for concurrent use and run one at a time.
type Client struct {
	cfg     Config
	dialect vsr.Dialect
	version vsr.Version // announced at login
	id      vsr.U128
	secret  [32]byte

	mu      sync.Mutex // one exchange at a time, session-wide: request numbers go out in order
	session uint64
	next    uint64 // the next request number
	primary *link
	login   vsr.LoginReply
	routes  map[routeKey]*link // partitions routed to another node (0.10)
	nodes   map[uint8]*link    // connections to other nodes, by replica id

	routeMu sync.Mutex // one route lookup (and node connection) at a time

	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Dial connects, logs in, and starts the keepalive pings. With a zero
// Dialect it finds the server's protocol within ConnectTimeout: a server
// of Iggy 0.8 gives a *LegacyServerError.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	cfg.defaults()
	if cfg.Address == "" {
		return nil, errors.New("iggy: no server address configured (iggy.address / IGGY_ADDRESS)")
	}
	lctx, cancel := context.WithTimeoutCause(ctx, cfg.ConnectTimeout,
		fmt.Errorf("%w: no login reply from %s within %s (iggy.connect_timeout)", ErrTimeout, cfg.Address, cfg.ConnectTimeout))
	defer cancel()
	d, auto := cfg.Dialect, cfg.Dialect == 0
	if auto {
		d = vsr.V011
	}
	ver := d.Version()
	for attempt := 0; ; attempt++ {
		c, err := dialOnce(lctx, cfg, d, ver)
		if err == nil {
			c.startKeepalive()
			return c, nil
		}
		var legacy *LegacyServerError
		if errors.As(err, &legacy) && !auto {
			return nil, &ProtocolError{Address: cfg.Address, Configured: d.Server(), Server: "0.8", Detail: fmt.Sprintf("it answered a protocol %s login in the legacy framing", ver)}
		}
		var ev *EvictedError
		if attempt > 0 || !errors.As(err, &ev) || ev.Eviction.Reason != vsr.EvictIncompatibleProtocol {
			return nil, err
		}
		sd, known := vsr.DialectOf(ev.Eviction.ServerMax)
		switch {
		case !known:
			return nil, fmt.Errorf("%w: the server at %s accepts binary protocol %s, which this client does not speak (it speaks 0.11 for Iggy 0.9 and 0.12 for Iggy 0.10)",
				ErrProtocolMismatch, cfg.Address, window(ev.Eviction.ServerMin, ev.Eviction.ServerMax))
		case auto || sd == d:
			// Detecting, or the same protocol line at another patch
			// number (the 0.12 gate wants the exact version).
			d, ver = sd, ev.Eviction.ServerMax
		default:
			return nil, &ProtocolError{Address: cfg.Address, Configured: d.Server(), Server: sd.Server(),
				Detail: fmt.Sprintf("it evicted a protocol %s login: it accepts %s", ver, window(ev.Eviction.ServerMin, ev.Eviction.ServerMax))}
		}
	}
}

func dialOnce(ctx context.Context, cfg Config, d vsr.Dialect, ver vsr.Version) (*Client, error) {
	l, err := dialLink(ctx, cfg.Address, cfg.ConnectTimeout, cfg.TLS, cfg.MaxReply)
	if err != nil {
		return nil, err
	}
	l.dialect = d
	c := &Client{cfg: cfg, dialect: d, version: ver, primary: l, stop: make(chan struct{})}
	if _, err := rand.Read(c.id[:]); err != nil {
		return nil, err
	}
	c.id[15] |= 0x80 // never zero
	if _, err := rand.Read(c.secret[:]); err != nil {
		return nil, err
	}
	if err := c.register(ctx); err != nil {
		l.close()
		return nil, err
	}
	return c, nil
}

// register logs in on the primary connection.
func (c *Client) register(ctx context.Context) error {
	l := &vsr.Login{Version: c.version, SDKName: c.cfg.SDKName, SDKVersion: c.cfg.SDKVersion, BindSecret: c.secret}
	if c.cfg.Token != "" {
		l.PAT, l.Token = true, c.cfg.Token
	} else {
		l.Username, l.Password = c.cfg.Username, c.cfg.Password
	}
	if err := checkCredentials(l); err != nil {
		return err
	}
	body := vsr.AppendLogin(nil, c.dialect, l)
	h := vsr.RequestHeader{Client: c.id, Operation: vsr.OpRegister, RequestChecksum: c.checksum(vsr.OpRegister, body)}
	rep, err := c.primary.exchange(ctx, time.Time{}, &h, body, nil)
	if err != nil {
		return err
	}
	if rep.hdr.Status != 0 {
		if RefusesLogin(rep.hdr.Status) {
			return fmt.Errorf("%w: %w", ErrLoginRefused, &vsr.ServerError{Code: rep.hdr.Status})
		}
		return &vsr.ServerError{Code: rep.hdr.Status}
	}
	if len(rep.body) == 0 {
		return c.primary.cut(fmt.Errorf("%w: the server refused the login with an empty reply", ErrConnectionLost))
	}
	payload, err := vsr.SplitResult(rep.body)
	if err != nil {
		var se *vsr.ServerError
		if errors.As(err, &se) && RefusesLogin(se.Code) {
			return c.primary.cut(fmt.Errorf("%w: %w: %w", ErrConnectionLost, ErrLoginRefused, se))
		}
		if errors.As(err, &se) {
			return c.primary.cut(fmt.Errorf("%w: login refused: %w", ErrConnectionLost, se))
		}
		return c.primary.cut(malformedCut(fmt.Errorf("login reply: %w", err)))
	}
	if c.login, err = vsr.DecodeLoginReply(payload); err != nil {
		return c.primary.cut(malformedCut(fmt.Errorf("login reply: %w", err)))
	}
	c.session, c.next = c.login.Session, 1
	return nil
}

// checkCredentials refuses what the login body cannot carry, naming
// lengths only: a secret never goes into an error.
func checkCredentials(l *vsr.Login) error {
	if l.PAT {
		if len(l.Token) > 255 {
			return fmt.Errorf("iggy personal access token: %d bytes, the protocol carries at most 255", len(l.Token))
		}
		return nil
	}
	if err := vsr.CheckName("iggy username", l.Username); err != nil {
		return err
	}
	if len(l.Password) == 0 || len(l.Password) > 255 {
		return fmt.Errorf("iggy password: must be 1..255 bytes, got %d", len(l.Password))
	}
	return nil
}

// checksum is the request_checksum of an operation: in 0.11 XXH3 of the
// body for metadata, session and logout operations (as the released client
// stamps them), in 0.12 a random identifier for those; 0 for partition
// operations and reads in both. A login is stamped with XXH3 in both: a
// 0.9 server verifies the stamp before it reads the version, so a random
// one would get InvalidFormat where the version gate names its protocol,
// and to 0.12 the hash is an identifier like any other.
func (c *Client) checksum(op vsr.Operation, body []byte) vsr.U128 {
	if op == vsr.OpNonReplicated || op >= vsr.OpSendMessages {
		return vsr.U128{}
	}
	if c.dialect >= vsr.V012 && op != vsr.OpRegister {
		var id vsr.U128
		_, _ = rand.Read(id[:])
		id[0] |= 1
		return id
	}
	return vsr.BodyChecksum(body)
}

// requestNumber assigns the request number: in 0.11 replicated operations
// take the next number and reads reuse the current one; in 0.12 every
// request takes a new one. Called with c.mu held.
func (c *Client) requestNumber(op vsr.Operation) uint64 {
	n := c.next
	if op.Replicated() || c.dialect >= vsr.V012 {
		c.next++
	}
	return n
}

// Dialect is the protocol the session speaks.
func (c *Client) Dialect() vsr.Dialect { return c.dialect }

// Server is what the server said at login: its release name and protocol.
func (c *Client) Server() (name string, protocol vsr.Version) {
	return c.login.ServerName, c.login.ServerVersion
}

// Lost reports whether the primary connection is unusable.
func (c *Client) Lost() bool { return c.primary.lostErr() != nil }

// Close ends the session: once the keepalive has stopped, a logout when
// the connection still works (its reply awaited for a second at most), then
// every connection closes. Later calls do nothing.
func (c *Client) Close() error {
	first := false
	c.closeOnce.Do(func() { first = true; close(c.stop) })
	if !first {
		return nil
	}
	c.wg.Wait()
	if !c.Lost() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = c.do(ctx, c.primary, vsr.CodeLogout, nil, nil)
		cancel()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.primary.close()
	for _, l := range c.nodes {
		l.close()
	}
	return nil
}

// do sends one request on l and returns the reply body: the result
// section stripped for result-framed operations, a *vsr.ServerError for a
// refusal. pctx is the partition context 0.12 requests carry.
func (c *Client) do(ctx context.Context, l *link, code uint32, body []byte, pctx *vsr.PartitionContext) ([]byte, error) {
	return c.doInto(ctx, l, code, body, pctx, nil)
}

// doInto is do reading the reply body into into when it is large enough.
func (c *Client) doInto(ctx context.Context, l *link, code uint32, body []byte, pctx *vsr.PartitionContext, into []byte) ([]byte, error) {
	op, ok := vsr.OperationOf(code)
	if !ok {
		return nil, fmt.Errorf("iggy: command %d is not one this client sends", code)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		// Ended while it waited its turn: nothing was sent, the
		// connection stays as it was.
		return nil, fmt.Errorf("iggy %s: not sent: %w", vsr.CodeName(code), context.Cause(ctx))
	}
	h := vsr.RequestHeader{Client: c.id, Operation: op, Session: c.session, Code: code, RequestChecksum: c.checksum(op, body)}
	h.Request = c.requestNumber(op)
	if pctx != nil && c.dialect >= vsr.V012 {
		h.PartitionIncarnation, h.OwnerGeneration, h.MinimumMetadataOp = pctx.Incarnation, pctx.OwnerGeneration, pctx.MetadataOp
	}
	var deadline time.Time
	if c.cfg.RequestTimeout > 0 {
		deadline = time.Now().Add(c.cfg.RequestTimeout)
	}
	rep, err := c.exchange(ctx, l, deadline, &h, body, into)
	if err != nil {
		return nil, err
	}
	if rep.hdr.Status != 0 {
		return nil, &vsr.ServerError{Code: rep.hdr.Status}
	}
	if !op.ResultFramed() {
		return rep.body, nil
	}
	payload, err := vsr.SplitResult(rep.body)
	var se *vsr.ServerError
	if err != nil && !errors.As(err, &se) {
		return nil, l.cut(malformedCut(fmt.Errorf("%s reply: %w", vsr.CodeName(code), err)))
	}
	return payload, err
}

// exchange sends h and body on l, and sends them again, unchanged (same
// session, request number and checksum, as the protocol asks), while the
// server answers that it has not committed (57) or accepted (58) the
// request yet: a VSR server says so while, for instance, the logout of a
// client that just disconnected is being committed.
func (c *Client) exchange(ctx context.Context, l *link, deadline time.Time, h *vsr.RequestHeader, body, into []byte) (reply, error) {
	pause := 5 * time.Millisecond
	for {
		rep, err := l.exchange(ctx, deadline, h, body, into)
		if err != nil || !transient(h.Operation, &rep) {
			return rep, err
		}
		if !h.Operation.Replicated() && c.dialect >= vsr.V012 {
			h.Request = c.requestNumber(h.Operation) // 0.12: every read a number of its own
		}
		if !deadline.IsZero() && time.Now().Add(pause).After(deadline) {
			return rep, nil
		}
		select {
		case <-ctx.Done():
			return rep, nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// transient reports a refusal to be replayed: 57 or 58, in the header's
// status or in a result-framed reply's result section.
func transient(op vsr.Operation, rep *reply) bool {
	err := error(&vsr.ServerError{Code: rep.hdr.Status})
	if rep.hdr.Status == 0 {
		if !op.ResultFramed() || len(rep.body) == 0 {
			return false
		}
		_, err = vsr.SplitResult(rep.body)
	}
	return vsr.IsStatus(err, vsr.StatusTransientNotCommitted) || vsr.IsStatus(err, vsr.StatusTransientNotAccepted)
}

// startKeepalive pings each connection that has sent nothing for
// Keepalive. A call in flight counts as traffic, so a busy client never
// waits behind a ping.
func (c *Client) startKeepalive() {
	if c.cfg.Keepalive < 0 {
		return
	}
	every := max(c.cfg.Keepalive/4, 10*time.Millisecond)
	c.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
			for _, l := range c.idleLinks() {
				ctx, cancel := context.WithTimeout(context.Background(), max(c.cfg.Keepalive, time.Second))
				_, _ = c.do(ctx, l, vsr.CodePing, nil, nil) // a failure cuts the link; the next call says why
				cancel()
			}
		}
	})
}

// idleLinks lists the live connections silent for Keepalive, unless a call
// is in flight.
func (c *Client) idleLinks() []*link {
	if !c.mu.TryLock() {
		return nil
	}
	defer c.mu.Unlock()
	var out []*link
	for _, l := range append([]*link{c.primary}, c.nodeLinks()...) {
		if l.lostErr() == nil && l.idleFor() >= c.cfg.Keepalive {
			out = append(out, l)
		}
	}
	return out
}

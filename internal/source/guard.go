package source

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/legacywire"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsrconn"
)

// guard sits between the SDK client and the server. SDK v0.8.0 dials with
// net.Dial (no timeout, retried forever), has no per-call deadline, its
// Close blocks behind an in-flight request, and after login it follows a
// "leader" named in the server's cluster metadata by dialing it itself; the
// guard dials with a timeout (and TLS), hands the SDK a loopback socket,
// relays request by request so that it can refuse such a redirect, and can
// cut both sides at any moment so that a stuck call returns.
type guard struct {
	ln       net.Listener
	upstream net.Conn
	address  string // as configured

	mu      sync.Mutex
	local   net.Conn
	closed  bool
	why     string // what ended the connection, for error messages
	refusal error  // why relay stopped on purpose, if it did
	done    chan struct{}
}

// dialGuard connects to addr within timeout (and completes the TLS
// handshake when tlsCfg is set: the SDK would retry a failed handshake
// forever) and starts a one-connection loopback forwarder. The SDK must
// connect to guard.addr() in plain TCP.
func dialGuard(ctx context.Context, addr string, timeout time.Duration, tlsCfg *tls.Config) (*guard, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: 15 * time.Second}
	up, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot reach Iggy at %s within %s: %w", ErrUnreachable, addr, timeout, err)
	}
	if tc, ok := up.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if tlsCfg != nil {
		tc := tls.Client(up, tlsCfg)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			up.Close()
			return nil, fmt.Errorf("%w: TLS handshake with Iggy at %s (server name %q) failed: %w", ErrUnreachable, addr, tlsCfg.ServerName, err)
		}
		up = tc
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		up.Close()
		return nil, fmt.Errorf("iggy connection guard: %w", err)
	}
	g := &guard{ln: ln, upstream: up, address: addr, done: make(chan struct{})}
	go g.serve()
	return g, nil
}

func (g *guard) addr() string { return g.ln.Addr().String() }

func (g *guard) serve() {
	defer close(g.done)
	c, err := g.ln.Accept()
	g.ln.Close()
	if err != nil {
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		c.Close()
		return
	}
	g.local = c
	g.mu.Unlock()
	g.relay(c)
	// One side ending means the conversation is over: cut both.
	g.cut()
}

// Command codes and reply statuses the guard looks at.
const (
	codeClusterMetadata = 12
	// statusUnavailable answers the SDK's cluster-metadata request instead of
	// the server when the server is the leader itself: the SDK compares the
	// leader with the guard's loopback address and would otherwise "redirect".
	statusUnavailable = 1
	// maxMetadataReply bounds the one reply the guard reads whole (64 nodes
	// with 255-byte names and addresses are well under it).
	maxMetadataReply = 64 << 10
)

// relay forwards the SDK's requests one at a time, each followed by exactly
// the reply bytes the SDK will read (an 8-byte status and length, then the
// payload only when the status is 0 and the length above 1, as the SDK
// reads it), so that it can look at the cluster metadata the SDK acts on.
// The SDK sends a request only after the previous reply (its calls hold one
// lock), so nothing is reordered.
func (g *guard) relay(local net.Conn) {
	in := bufio.NewReaderSize(local, 16<<10)
	out := bufio.NewWriterSize(local, 64<<10)
	upR := bufio.NewReaderSize(g.upstream, 64<<10)
	upW := bufio.NewWriterSize(g.upstream, 16<<10)
	var hdr [legacywire.HeaderSize]byte
	for {
		req, err := legacywire.ReadRequestHeader(in)
		if err != nil {
			return // ended, or not a frame the SDK writes
		}
		upW.Write(req.Append(hdr[:0]))
		if _, err := io.CopyN(upW, in, req.PayloadSize()); err != nil {
			return
		}
		if upW.Flush() != nil {
			return
		}
		rep, err := legacywire.ReadReplyHeader(upR)
		if err != nil {
			g.serverGone(err)
			return
		}
		if req.Code == codeClusterMetadata && rep.HasBody() {
			if !g.relayMetadata(upR, out, rep) {
				return
			}
			continue
		}
		out.Write(rep.Append(hdr[:0]))
		if rep.HasBody() {
			if _, err := io.CopyN(out, upR, int64(rep.Length)); err != nil {
				g.serverGone(err)
				return
			}
		}
		if out.Flush() != nil {
			return
		}
	}
}

// relayMetadata reads a cluster-metadata reply and passes on what the SDK
// may safely act on; false ends the relay.
func (g *guard) relayMetadata(upR *bufio.Reader, out *bufio.Writer, rep legacywire.ReplyHeader) bool {
	if rep.Length > maxMetadataReply {
		g.refuse(fmt.Errorf("%w: the server at %s sent %d bytes of cluster metadata (more than %d)", ErrLeaderRedirect, g.address, rep.Length, maxMetadataReply))
		return false
	}
	body, err := legacywire.ReadPayload(upR, nil, int(rep.Length))
	if err != nil {
		return false
	}
	leader, err := g.leaderElsewhere(body)
	switch {
	case err != nil:
		g.refuse(err)
		return false
	case leader:
		// The server leads: answer "unavailable" so that the SDK stays on
		// this connection (it logs the failure and continues).
		out.Write(legacywire.ReplyHeader{Status: statusUnavailable}.Append(nil))
	default:
		out.Write(rep.Append(nil))
		out.Write(body)
	}
	return out.Flush() == nil
}

// leaderElsewhere applies the SDK's redirect rule to a metadata reply: more
// than one node and a healthy leader. It returns true when the SDK would
// redirect but the leader is the server this connection reached (answer it
// "unavailable"), false when the SDK would not redirect (pass the reply on),
// and a *RedirectError when the leader is another server: the SDK would dial
// it itself, in plain TCP, and send the credentials again.
func (g *guard) leaderElsewhere(body []byte) (same bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			same, err = false, fmt.Errorf("%w: malformed cluster metadata from %s (%v)", ErrMalformedReply, g.address, r)
		}
	}()
	var meta iggcon.ClusterMetadata
	if meta.UnmarshalBinary(body) != nil || len(meta.Nodes) <= 1 {
		return false, nil // the SDK ignores it too
	}
	for _, n := range meta.Nodes {
		if n.Role != iggcon.RoleLeader || n.Status != iggcon.Healthy {
			continue
		}
		addr := net.JoinHostPort(n.IP, strconv.Itoa(int(n.Endpoints.Tcp)))
		if vsrconn.SameEndpoint(addr, g.address) || vsrconn.SameEndpoint(addr, g.upstream.RemoteAddr().String()) {
			return true, nil
		}
		return false, &RedirectError{Server: g.address, Cluster: meta.Name, Nodes: len(meta.Nodes), Leader: n.Name, LeaderAddress: addr}
	}
	return false, nil // no healthy leader: the SDK stays
}

// refuse records why the guard ended the conversation.
func (g *guard) refuse(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refusal == nil {
		g.refusal = err
	}
}

// refused returns why the guard refused the server's redirect, if it did.
func (g *guard) refused() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refusal
}

// ErrLeaderRedirect is wrapped by the error of a connection whose server
// asked the client to move to another node; the sink never follows.
var ErrLeaderRedirect = errors.New("iggy server redirects to another node")

// RedirectError says which leader the server named.
type RedirectError struct {
	Server        string // the configured address
	Cluster       string
	Nodes         int
	Leader        string // the leader node's name
	LeaderAddress string // host:port
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s: the server at %s says node %q at %s leads cluster %q (%d nodes); the sink does not follow that redirect "+
		"(the Go SDK would log in there again itself, in plain TCP even with TLS on, at an address nobody configured): "+
		"set iggy.address (IGGY_ADDRESS) to the leader if it is one you trust", ErrLeaderRedirect, e.Server, e.Leader, e.LeaderAddress, e.Cluster, e.Nodes)
}

func (e *RedirectError) Unwrap() error { return ErrLeaderRedirect }

// cut closes both sides; every blocked SDK read or write then fails.
func (g *guard) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	g.ln.Close()
	g.upstream.Close()
	if g.local != nil {
		g.local.Close()
	}
}

// note records why the connection ended, unless it was cut first.
func (g *guard) note(why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed && g.why == "" {
		g.why = why
	}
}

// serverGone notes why reading from the server stopped: only the server's
// side says something about the server; the loopback side ends because the
// sink closed or cut it.
func (g *guard) serverGone(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		g.note("the server closed the connection")
	case !errors.Is(err, net.ErrClosed):
		g.note("reading from the server failed: " + err.Error())
	}
}

// reason says why the connection ended ("" when the sink cut it).
func (g *guard) reason() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.why
}

func (g *guard) isCut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

func (g *guard) wait() { <-g.done }

// tlsServerName picks the name the server certificate must carry.
func tlsServerName(addr, domain string) string {
	if domain != "" {
		return domain
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

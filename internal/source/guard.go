package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// guard sits between the SDK client and the server. SDK v0.8.0 dials with
// net.Dial (no timeout, retried forever), has no per-call deadline, and its
// Close blocks behind an in-flight request; the guard dials itself with a
// timeout, hands the SDK a loopback socket, and can cut both sides at any
// moment so that a stuck call returns.
type guard struct {
	ln       net.Listener
	upstream net.Conn

	mu     sync.Mutex
	local  net.Conn
	closed bool
	why    string // what ended the connection, for error messages
	done   chan struct{}
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
	g := &guard{ln: ln, upstream: up, done: make(chan struct{})}
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
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn, fromServer bool) {
		defer wg.Done()
		_, err := io.Copy(dst, src)
		if fromServer {
			// Only the server's side says something about the server; the
			// loopback side ends because the sink closed or cut it.
			switch {
			case err == nil:
				g.note("the server closed the connection")
			case !errors.Is(err, net.ErrClosed):
				g.note("reading from the server failed: " + err.Error())
			}
		}
		// One direction ending means the conversation is over: cut both.
		g.cut()
	}
	go pipe(g.upstream, c, false)
	go pipe(c, g.upstream, true)
	wg.Wait()
}

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

// ErrUnreachable reports that the Iggy server could not be reached.
var ErrUnreachable = errors.New("iggy unreachable")

// ErrConnectionLost reports that the connection broke or was cut by a deadline.
var ErrConnectionLost = errors.New("iggy connection lost")

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

package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"
)

// Config says where the Iggy server is and how to log in. Token, when set,
// wins over Username/Password.
type Config struct {
	Address        string
	Username       string
	Password       string
	Token          string
	TLS            bool
	TLSCAFile      string
	TLSDomain      string
	ConnectTimeout time.Duration
	// RequestTimeout bounds the wait for each reply (0 = only the caller's
	// context); past it the connection is cut.
	RequestTimeout time.Duration
}

// Conn is one logged-in connection. Calls are serialised by the SDK; Conn
// adds deadlines: when a call outlives its context the connection is cut
// and every later call fails with ErrConnectionLost.
type Conn struct {
	cfg Config
	cli iggcon.Client
	g   *guard

	mu      sync.Mutex
	why     error                 // why the connection was cut, when this Conn cut it
	streams map[string]streamInfo // by configured value
	topics  map[[3]string]*Topic  // by configured stream, topic and group
}

// Open dials (bounded by ConnectTimeout), logs in, and returns the connection.
func Open(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Address == "" {
		return nil, errors.New("iggy: no server address configured (iggy.address / IGGY_ADDRESS)")
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	var tlsCfg *tls.Config
	if cfg.TLS {
		var err error
		if tlsCfg, err = clientTLS(cfg); err != nil {
			return nil, err
		}
	}
	g, err := dialGuard(ctx, cfg.Address, cfg.ConnectTimeout, tlsCfg)
	if err != nil {
		return nil, err
	}
	c := &Conn{cfg: cfg, g: g}
	ch := make(chan clientResult, 1)
	go func() {
		cli, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(g.addr())))
		ch <- clientResult{cli, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			g.cut()
			return nil, fmt.Errorf("iggy: create client for %s: %w", cfg.Address, r.err)
		}
		c.cli = r.cli
	case <-time.After(cfg.ConnectTimeout):
		return nil, c.abandon(ch, fmt.Errorf("%w: iggy client setup for %s timed out", ErrUnreachable, cfg.Address))
	case <-ctx.Done():
		return nil, c.abandon(ch, fmt.Errorf("iggy client setup for %s: %w", cfg.Address, ctx.Err()))
	}
	loginCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	err = c.do(loginCtx, "login", func() error {
		var err error
		if cfg.Token != "" {
			_, err = c.cli.LoginWithPersonalAccessToken(cfg.Token)
		} else {
			_, err = c.cli.LoginUser(cfg.Username, cfg.Password)
		}
		return err
	})
	if refusal := g.refused(); refusal != nil {
		c.Close()
		return nil, fmt.Errorf("iggy: login to %s: %w", cfg.Address, refusal)
	}
	if err != nil {
		why := c.g.reason()
		c.Close()
		who := "user " + fmt.Sprintf("%q", cfg.Username)
		if cfg.Token != "" {
			who = "a personal access token"
		}
		if why != "" {
			// Something accepted the TCP connection but did not speak Iggy
			// back: a proxy, a firewall, another service on that port.
			return nil, fmt.Errorf("iggy: login to %s as %s: %w: %s before answering; is %s the TCP address of an Iggy 0.8 server (default port 8090)?",
				cfg.Address, who, ErrConnectionLost, why, cfg.Address)
		}
		return nil, fmt.Errorf("iggy: login to %s as %s: %w", cfg.Address, who, err)
	}
	return c, nil
}

type clientResult struct {
	cli iggcon.Client
	err error
}

// abandon gives up on a client still being created. The SDK dials our own
// loopback listener, so this only happens on a badly overloaded machine; a
// client that appears later is closed.
func (c *Conn) abandon(ch <-chan clientResult, err error) error {
	c.g.cut()
	go func() {
		if r := <-ch; r.cli != nil {
			r.cli.Close()
		}
	}()
	return err
}

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

// Close ends the session. The SDK sends nothing on close; the server drops
// this connection's group memberships when the socket closes.
func (c *Conn) Close() error {
	if c.cli != nil {
		c.g.cut() // first, so Close cannot block behind a stuck call
		_ = c.cli.Close()
	} else {
		c.g.cut()
	}
	c.g.wait()
	return nil
}

// do runs one SDK call under ctx and the request timeout. If they end
// first the connection is cut (there is no other way to interrupt SDK
// v0.8.0) and the call's goroutine is waited for, so nothing leaks. A reply
// the SDK cannot decode (its decoders index short frames and panic) is an
// error on this connection, which is cut: never a crash of the process.
func (c *Conn) do(ctx context.Context, what string, call func() error) error {
	if c.g.isCut() {
		if why := c.lostBecause(); why != nil {
			return fmt.Errorf("iggy %s: %w (earlier: %w)", what, ErrConnectionLost, why)
		}
		return fmt.Errorf("iggy %s: %w", what, ErrConnectionLost)
	}
	if d := c.cfg.RequestTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("%w: no reply within %s (iggy.request_timeout / IGGY_REQUEST_TIMEOUT)", ErrTimeout, d))
		defer cancel()
	}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("%w (%v)", ErrMalformedReply, r)
				c.lose(fmt.Errorf("%s: %w", what, err))
				done <- err
			}
		}()
		done <- call()
	}()
	select {
	case err := <-done:
		if errors.Is(err, ErrMalformedReply) {
			return fmt.Errorf("iggy %s at %s: %w: %w", what, c.cfg.Address, ErrConnectionLost, err)
		}
		if err != nil && c.g.isCut() {
			why := c.g.reason()
			if why == "" {
				why = "the connection was closed"
			}
			return fmt.Errorf("iggy %s at %s: %s: %w%s", what, c.cfg.Address, why, ErrConnectionLost, sdkDetail(err))
		}
		return err
	case <-ctx.Done():
		c.lose(fmt.Errorf("%s: %w", what, context.Cause(ctx)))
		<-done
		return fmt.Errorf("iggy %s at %s: no answer in time: %w: %w", what, c.cfg.Address, ErrConnectionLost, context.Cause(ctx))
	}
}

// lose cuts the connection, remembering why (the first reason wins) so that
// every later call can say it.
func (c *Conn) lose(why error) {
	c.mu.Lock()
	if c.why == nil {
		c.why = why
	}
	c.mu.Unlock()
	c.g.cut()
}

func (c *Conn) lostBecause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why
}

// ErrMalformedReply reports a reply the SDK could not decode; the
// connection is cut.
var ErrMalformedReply = errors.New("malformed reply from the Iggy server")

// ErrTimeout reports a reply that did not come within RequestTimeout.
var ErrTimeout = errors.New("iggy request timed out")

// Lost reports whether the connection is unusable.
func (c *Conn) Lost() bool { return c.g.isCut() }

// sdkDetail is the SDK's own error text when it says more than SDK v0.8.0's
// bare "error" for a dropped connection.
func sdkDetail(err error) string {
	if msg := err.Error(); msg != "" && msg != "error" {
		return " (" + msg + ")"
	}
	return ""
}

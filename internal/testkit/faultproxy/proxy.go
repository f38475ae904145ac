package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Config says which faults to inject. Rates are probabilities per request,
// drawn in the order Error, Reset, Stall from one seeded generator, so their
// sum is the share of requests that see a fault.
type Config struct {
	Seed      int64
	ErrorRate float64 // reply 500 InternalError or 503 SlowDown without forwarding
	ResetRate float64 // close the connection with a TCP reset, no reply, no forwarding
	StallRate float64 // forward, then hold the reply for Stall
	// CorruptRate: forward the request with one byte of its body flipped
	// (the middle one; requests without a body pass untouched), as a
	// broken proxy or NIC would. Drawn after Error, Reset and Stall.
	CorruptRate float64
	// Stall should exceed the client's response-header timeout, so the client
	// gives up although the server did the work.
	Stall time.Duration
	// Forbid answers every (selected) request 403 AccessDenied: a permanent,
	// non-retryable failure.
	Forbid bool
	// Only, when set, limits faults to the requests it accepts; the rest are
	// forwarded untouched.
	Only func(r *http.Request) bool
}

// Stats counts what the proxy did since it started.
type Stats struct {
	Requests  int64 // every request received
	Errors    int64 // 500/503 injected
	Resets    int64 // connections reset
	Stalls    int64 // replies delayed
	Forbidden int64 // 403 injected
	Forwarded int64 // requests passed to the target (stalled and corrupted ones included)
	Corrupted int64 // requests forwarded with a byte of the body flipped
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	url    string
	server *http.Server
	proxy  *httputil.ReverseProxy
	closed chan struct{}
	once   sync.Once

	mu  sync.Mutex
	cfg Config
	rng *rand.Rand

	requests, errors, resets, stalls, forbidden, forwarded, corrupted atomic.Int64
}

// Start listens on 127.0.0.1:<free port> and forwards to target (an http URL
// such as a versitygw endpoint). The Host header is passed through unchanged,
// so SigV4 signatures made for the proxy's address still verify upstream.
func Start(target string, c Config) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not an http(s) URL", target)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		url:    "http://" + l.Addr().String(),
		closed: make(chan struct{}),
		cfg:    c,
		rng:    rand.New(rand.NewPCG(uint64(c.Seed), 0x5eed)),
	}
	p.proxy = &httputil.ReverseProxy{
		// Rewrite leaves Out.Host as the client sent it: the signed host.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "faultproxy: target: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.server = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

func (c Config) validate() error {
	for name, r := range map[string]float64{"ErrorRate": c.ErrorRate, "ResetRate": c.ResetRate, "StallRate": c.StallRate, "CorruptRate": c.CorruptRate} {
		if r < 0 || r > 1 {
			return fmt.Errorf("faultproxy: %s %v is outside [0, 1]", name, r)
		}
	}
	if sum := c.ErrorRate + c.ResetRate + c.StallRate + c.CorruptRate; sum > 1 {
		return fmt.Errorf("faultproxy: rates sum to %v, more than 1", sum)
	}
	if c.StallRate > 0 && c.Stall <= 0 {
		return errors.New("faultproxy: StallRate set without a Stall duration")
	}
	return nil
}

// URL is the proxy's base URL, to use as the S3 endpoint.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy, ends stalled replies and closes all connections.
func (p *Proxy) Close() error {
	var err error
	p.once.Do(func() {
		close(p.closed)
		err = p.server.Close()
	})
	return err
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	return Stats{
		Requests:  p.requests.Load(),
		Errors:    p.errors.Load(),
		Resets:    p.resets.Load(),
		Stalls:    p.stalls.Load(),
		Forbidden: p.forbidden.Load(),
		Forwarded: p.forwarded.Load(),
		Corrupted: p.corrupted.Load(),
	}
}

// Set replaces the fault configuration for later requests (e.g. all rates 0
// to heal). The random sequence continues; Seed is only read by Start. An
// invalid configuration is ignored and reported.
func (p *Proxy) Set(c Config) error {
	if err := c.validate(); err != nil {
		return err
	}
	p.mu.Lock()
	p.cfg = c
	p.mu.Unlock()
	return nil
}

type fault int

const (
	none fault = iota
	injectError
	reset
	stall
	forbid
	corrupt
)

func (p *Proxy) decide(r *http.Request) (fault, time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cfg
	if c.Only != nil && !c.Only(r) {
		return none, 0, 0
	}
	if c.Forbid {
		return forbid, 0, 0
	}
	x := p.rng.Float64()
	switch {
	case x < c.ErrorRate:
		status := http.StatusInternalServerError
		if p.rng.IntN(2) == 1 {
			status = http.StatusServiceUnavailable
		}
		return injectError, 0, status
	case x < c.ErrorRate+c.ResetRate:
		return reset, 0, 0
	case x < c.ErrorRate+c.ResetRate+c.StallRate:
		return stall, c.Stall, 0
	case x < c.ErrorRate+c.ResetRate+c.StallRate+c.CorruptRate:
		return corrupt, 0, 0
	}
	return none, 0, 0
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	f, stallFor, status := p.decide(r)
	switch f {
	case forbid:
		p.forbidden.Add(1)
		writeS3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied (faultproxy)")
	case injectError:
		p.errors.Add(1)
		if status == http.StatusServiceUnavailable {
			writeS3Error(w, r, status, "SlowDown", "Please reduce your request rate. (faultproxy)")
		} else {
			writeS3Error(w, r, status, "InternalError", "We encountered an internal error. (faultproxy)")
		}
	case reset:
		p.resets.Add(1)
		resetConnection(w)
	case stall:
		p.stalls.Add(1)
		p.forwarded.Add(1)
		// The target does the work; only the reply is late.
		rec := httptest.NewRecorder()
		p.proxy.ServeHTTP(rec, r)
		timer := time.NewTimer(stallFor)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done(): // the client gave up
			panic(http.ErrAbortHandler)
		case <-p.closed:
			// Drop the connection: returning normally would send an empty 200.
			panic(http.ErrAbortHandler)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	case corrupt:
		p.forwarded.Add(1)
		if r.ContentLength > 0 {
			p.corrupted.Add(1)
			r.Body = &flipReader{r: r.Body, at: r.ContentLength / 2}
		}
		p.proxy.ServeHTTP(w, r)
	default:
		p.forwarded.Add(1)
		p.proxy.ServeHTTP(w, r)
	}
}

// flipReader passes a body through with the byte at offset at inverted.
type flipReader struct {
	r   io.ReadCloser
	at  int64
	off int64
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if i := f.at - f.off; i >= 0 && i < int64(n) {
		p[i] ^= 0xff
	}
	f.off += int64(n)
	return n, err
}

func (f *flipReader) Close() error { return f.r.Close() }

// writeS3Error replies like S3 does: after the request body has arrived, so
// the client sees the status rather than a reset while still sending.
func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><RequestId>faultproxy</RequestId></Error>`, code, message)
}

// resetConnection drops the client's connection with a TCP RST (linger 0),
// the way a crashing load balancer looks to the client.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

package iggyfake

import (
	"bufio"
	"crypto/tls"
	"io"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/legacywire"
)

// Command codes tests act on (Iggy 0.8 wire protocol).
const (
	CodePing            = 1
	CodeClusterMetadata = 12
	CodeLoginUser       = 38
	CodeLoginPAT        = 44
	CodePollMessages    = 100
	CodeGetStream       = 200
	CodeGetTopic        = 300
)

// Request is one request frame: [len:u32][code:u32][payload].
type Request struct {
	Code    uint32
	Payload []byte
}

// Reply is one reply frame: [status:u32][length:u32][payload].
type Reply struct {
	Status  uint32
	Payload []byte
	// Stall withholds the reply (and every later one) until the connection closes.
	Stall bool
	// Close closes the connection instead of replying.
	Close bool
}

// ReadRequest reads one request frame. Its payload grows as it arrives, so
// a hostile length alone allocates little; there is no other limit.
func ReadRequest(r io.Reader) (Request, error) {
	h, p, err := legacywire.ReadRequest(r, nil, math.MaxInt)
	return Request{Code: h.Code, Payload: p}, err
}

// WriteRequest writes one request frame.
func WriteRequest(w io.Writer, req Request) error {
	return legacywire.WriteRequest(w, req.Code, req.Payload)
}

// ReadReply reads one reply frame the way SDK v0.8.0 does: a payload only
// when the status is 0 and the length above 1.
func ReadReply(r io.Reader) (Reply, error) {
	h, p, err := legacywire.ReadReply(r, nil, math.MaxInt)
	return Reply{Status: h.Status, Payload: p}, err
}

// WriteReply writes one reply frame, its payload whatever the status.
func WriteReply(w io.Writer, rep Reply) error {
	return legacywire.WriteReply(w, rep.Status, rep.Payload)
}

// listener accepts connections until the test ends and closes them then.
type listener struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func listen(t testing.TB, tlsCfg *tls.Config, serve func(c net.Conn)) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	l := &listener{ln: ln}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.conns = append(l.conns, c)
			l.mu.Unlock()
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	t.Cleanup(l.close)
	return l
}

func (l *listener) close() {
	l.ln.Close()
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// Proxy forwards Iggy frames between a client and a real server, letting a
// test replace or withhold any reply.
type Proxy struct {
	l *listener
	// Rewrite, when set, sees every reply the server sent to a request and
	// returns what the client gets instead (return rep itself to pass it on).
	rewrite func(req Request, rep Reply) Reply
}

// StartProxy listens on 127.0.0.1 and forwards each connection to target.
func StartProxy(t testing.TB, target string, rewrite func(req Request, rep Reply) Reply) *Proxy {
	t.Helper()
	p := &Proxy{rewrite: rewrite}
	p.l = listen(t, nil, func(c net.Conn) {
		up, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer up.Close()
		p.relay(c, up)
	})
	return p
}

func (p *Proxy) relay(c, up net.Conn) {
	in, upR := bufio.NewReader(c), bufio.NewReader(up)
	for {
		req, err := ReadRequest(in)
		if err != nil || WriteRequest(up, req) != nil {
			return
		}
		rep, err := ReadReply(upR)
		if err != nil {
			return
		}
		if p.rewrite != nil {
			rep = p.rewrite(req, rep)
		}
		switch {
		case rep.Close:
			return
		case rep.Stall:
			io.Copy(io.Discard, in) //nolint:errcheck // hold until the client gives up
			return
		}
		if WriteReply(c, rep) != nil {
			return
		}
	}
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.l.ln.Addr().String() }

// Server answers Iggy requests with a script: handle returns the reply to
// each request (the zero Reply is an empty OK).
type Server struct{ l *listener }

// StartServer listens on 127.0.0.1 (with TLS when tlsCfg is set).
func StartServer(t testing.TB, tlsCfg *tls.Config, handle func(req Request) Reply) *Server {
	t.Helper()
	return &Server{l: listen(t, tlsCfg, func(c net.Conn) {
		in := bufio.NewReader(c)
		for {
			req, err := ReadRequest(in)
			if err != nil {
				return
			}
			rep := handle(req)
			switch {
			case rep.Close:
				return
			case rep.Stall:
				io.Copy(io.Discard, in) //nolint:errcheck // hold until the client gives up
				return
			}
			if WriteReply(c, rep) != nil {
				return
			}
		}
	})}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.l.ln.Addr().String() }

// Recorder accepts connections and keeps every byte they send, answering
// nothing: a stand-in for a server the client must never talk to.
type Recorder struct {
	l   *listener
	mu  sync.Mutex
	got []byte
	n   int
}

// StartRecorder listens on 127.0.0.1 (with TLS when tlsCfg is set).
func StartRecorder(t testing.TB, tlsCfg *tls.Config) *Recorder {
	t.Helper()
	r := &Recorder{}
	r.l = listen(t, tlsCfg, func(c net.Conn) {
		r.mu.Lock()
		r.n++
		r.mu.Unlock()
		// Keep what arrives within a moment, then end the conversation: a
		// client that sent credentials would otherwise wait for a reply.
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			r.mu.Lock()
			r.got = append(r.got, buf[:n]...)
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	return r
}

// Addr is the recorder's host:port.
func (r *Recorder) Addr() string { return r.l.ln.Addr().String() }

// Received returns the bytes received so far and the number of connections.
func (r *Recorder) Received() ([]byte, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.got...), r.n
}

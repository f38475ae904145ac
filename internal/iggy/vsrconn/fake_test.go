package vsrconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// fakeServer is a scripted peer on loopback for the client's hostile and
// protocol-detection cases: it reads whole frames and writes what its
// script returns. Real-server behaviour is tested against the in-repo
// broker and real servers (internal/source).
type fakeServer struct {
	t      *testing.T
	ln     net.Listener
	script func(c *fakeConn, h vsr.RequestHeader, body []byte) []byte

	mu       sync.Mutex
	requests []fakeRequest
	conns    int
}

type fakeRequest struct {
	conn int
	at   time.Time
	hdr  vsr.RequestHeader
	body []byte
}

// fakeConn is one accepted connection's state.
type fakeConn struct {
	n       int
	dialect vsr.Dialect
}

func startFake(t *testing.T, script func(c *fakeConn, h vsr.RequestHeader, body []byte) []byte) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, script: script}
	t.Cleanup(func() { ln.Close() })
	go s.accept()
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns++
		c := &fakeConn{n: s.conns, dialect: vsr.V011}
		s.mu.Unlock()
		go s.serve(nc, c)
	}
}

func (s *fakeServer) serve(nc net.Conn, c *fakeConn) {
	defer nc.Close()
	hdr := make([]byte, vsr.HeaderSize)
	for {
		if _, err := io.ReadFull(nc, hdr); err != nil {
			return
		}
		h, err := vsr.DecodeRequestHeader(hdr, vsr.V012) // reads the 0.12 context too; 0 in 0.11
		if err != nil {
			return
		}
		body := make([]byte, h.Size-vsr.HeaderSize)
		if _, err := io.ReadFull(nc, body); err != nil {
			return
		}
		if h.Operation == vsr.OpRegister {
			if v, err := vsr.LoginVersion(body); err == nil {
				if d, ok := vsr.DialectOf(v); ok {
					c.dialect = d
				}
			}
		}
		s.mu.Lock()
		s.requests = append(s.requests, fakeRequest{conn: c.n, at: time.Now(), hdr: h, body: body})
		s.mu.Unlock()
		out := s.script(c, h, body)
		if out == nil {
			continue // no answer
		}
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

func (s *fakeServer) received() []fakeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]fakeRequest(nil), s.requests...)
}

func (s *fakeServer) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// replyTo frames a reply to h.
func replyTo(d vsr.Dialect, h vsr.RequestHeader, status uint32, body []byte) []byte {
	rh := vsr.ReplyHeader{Size: uint32(vsr.HeaderSize + len(body)), Client: h.Client, Request: h.Request, Operation: h.Operation, Status: status}
	return append(vsr.AppendReplyHeader(nil, d, &rh), body...)
}

func evict(h vsr.RequestHeader, reason vsr.EvictionReason, lo, hi vsr.Version) []byte {
	return vsr.AppendEviction(nil, &vsr.Eviction{Client: h.Client, Reason: reason, ServerMin: lo, ServerMax: hi})
}

// loginReply is a successful login's body.
func loginReply(session uint64, d vsr.Dialect, name string) []byte {
	return vsr.AppendLoginReply(vsr.AppendResultOK(nil), &vsr.LoginReply{Session: session, ServerVersion: d.Version(), ServerName: name})
}

// serverOf returns a script of a healthy single node of dialect d that
// answers the login, pings and anything in more (by code); other requests
// get status 3.
func serverOf(d vsr.Dialect, more map[uint32]func(c *fakeConn, h vsr.RequestHeader, body []byte) []byte) func(*fakeConn, vsr.RequestHeader, []byte) []byte {
	return func(c *fakeConn, h vsr.RequestHeader, body []byte) []byte {
		code := vsr.CodeOf(&h)
		if h.Operation == vsr.OpRegister {
			v, _ := vsr.LoginVersion(body)
			if !vsr.Compatible(d, d.Version(), d.Version(), v) {
				return evict(h, vsr.EvictIncompatibleProtocol, d.Version(), d.Version())
			}
			return replyTo(d, h, 0, loginReply(7, d, "fake-"+d.Server()))
		}
		if f := more[code]; f != nil {
			return f(c, h, body)
		}
		switch code {
		case vsr.CodePing, vsr.CodeLogout:
			return replyTo(d, h, 0, nil)
		}
		return replyTo(d, h, vsr.StatusInvalidCommand, nil)
	}
}

func mustErr(t *testing.T, err error, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}

// legacyAnswer is what an Iggy 0.8 server writes for each 8-byte frame it
// cannot parse: status 3, length 0.
func legacyAnswer() []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 3), 0)
}

func contains(s string, subs ...string) (missing string, ok bool) {
	for _, x := range subs {
		if !bytes.Contains([]byte(s), []byte(x)) {
			return x, false
		}
	}
	return "", true
}

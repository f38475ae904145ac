package vsrconn

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

func TestLoginAndRequestNumbers(t *testing.T) {
	for _, d := range []vsr.Dialect{vsr.V011, vsr.V012} {
		t.Run(d.Server(), func(t *testing.T) {
			srv := startFake(t, serverOf(d, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
				vsr.CodeJoinGroup: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
					return replyTo(d, h, 0, vsr.AppendResultOK(nil))
				},
				vsr.CodeGetStream: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte { return replyTo(d, h, 0, nil) },
			}))
			ctx := context.Background()
			c, err := Dial(ctx, Config{Address: srv.addr(), Username: "iggy", Password: "secret-pw", Dialect: d, Keepalive: -1})
			if err != nil {
				t.Fatal(err)
			}
			if name, v := c.Server(); name != "fake-"+d.Server() || v != d.Version() {
				t.Fatalf("server %q %s", name, v)
			}
			g := vsr.GroupRef{Stream: vsr.NamedID("s"), Topic: vsr.NamedID("t"), Group: vsr.NamedID("g")}
			if _, ok, err := c.GetStream(ctx, vsr.NamedID("s")); err != nil || ok {
				t.Fatalf("get stream: ok=%v err=%v", ok, err)
			}
			if err := c.JoinGroup(ctx, g); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := c.GetStream(ctx, vsr.NamedID("s")); err != nil || ok {
				t.Fatalf("get stream: ok=%v err=%v", ok, err)
			}
			c.Close()
			reqs := srv.received()
			if len(reqs) != 5 {
				t.Fatalf("%d requests, want login, get, join, get, logout", len(reqs))
			}
			login := reqs[0].hdr
			if login.Operation != vsr.OpRegister || login.Request != 0 || login.Session != 0 || login.Client.IsZero() {
				t.Fatalf("login header %+v", login)
			}
			l, err := vsr.DecodeLogin(reqs[0].body, d)
			if err != nil || l.Username != "iggy" || l.Password != "secret-pw" || l.Version != d.Version() || l.PAT {
				t.Fatalf("login body %+v, %v", l, err)
			}
			// 0.11: reads reuse the current number, replicated operations
			// take the next; 0.12: every request takes a new one.
			want := []uint64{1, 1, 2, 2}
			if d == vsr.V012 {
				want = []uint64{1, 2, 3, 4}
				if l.BindSecret == ([32]byte{}) {
					t.Fatal("0.12 login without a bind secret")
				}
			}
			for i, r := range reqs[1:] {
				if r.hdr.Request != want[i] || r.hdr.Session != 7 || r.hdr.Client != login.Client {
					t.Fatalf("request %d (%s): number %d session %d, want %d and 7", i+1, vsr.CodeName(vsr.CodeOf(&r.hdr)), r.hdr.Request, r.hdr.Session, want[i])
				}
			}
			join := reqs[2].hdr
			switch {
			case d == vsr.V011 && join.RequestChecksum != vsr.BodyChecksum(reqs[2].body):
				t.Fatal("0.11 join not stamped with XXH3 of its body")
			case d == vsr.V012 && (join.RequestChecksum.IsZero() || join.RequestChecksum == vsr.BodyChecksum(reqs[2].body)):
				t.Fatal("0.12 join: want a random request id, not a body hash")
			case !reqs[1].hdr.RequestChecksum.IsZero():
				t.Fatal("a read carries a request checksum")
			}
		})
	}
}

func TestDetectsEachProtocol(t *testing.T) {
	legacy := startFake(t, func(*fakeConn, vsr.RequestHeader, []byte) []byte { return legacyAnswer() })
	v09 := startFake(t, serverOf(vsr.V011, nil))
	v10 := startFake(t, serverOf(vsr.V012, nil))
	ctx := context.Background()

	_, err := Dial(ctx, Config{Address: legacy.addr(), Username: "iggy", Password: "iggy", Keepalive: -1})
	var le *LegacyServerError
	if !errors.As(err, &le) {
		t.Fatalf("auto on an Iggy 0.8 server: %v, want a LegacyServerError", err)
	}
	for _, tc := range []struct {
		srv   *fakeServer
		want  vsr.Dialect
		conns int
	}{{v09, vsr.V011, 1}, {v10, vsr.V012, 2}} {
		c, err := Dial(ctx, Config{Address: tc.srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1})
		if err != nil {
			t.Fatalf("auto on %s: %v", tc.want, err)
		}
		if c.Dialect() != tc.want || tc.srv.connections() != tc.conns {
			t.Fatalf("auto found %s over %d connections, want %s over %d", c.Dialect(), tc.srv.connections(), tc.want, tc.conns)
		}
		c.Close()
	}
}

func TestPinnedWrongProtocolFailsFastNamingBoth(t *testing.T) {
	legacy := startFake(t, func(*fakeConn, vsr.RequestHeader, []byte) []byte { return legacyAnswer() })
	v09 := startFake(t, serverOf(vsr.V011, nil))
	v10 := startFake(t, serverOf(vsr.V012, nil))
	for _, tc := range []struct {
		name   string
		srv    *fakeServer
		pin    vsr.Dialect
		config string
		server string
	}{
		{"0.9 on 0.8", legacy, vsr.V011, "0.9", "Iggy 0.8"},
		{"0.10 on 0.8", legacy, vsr.V012, "0.10", "Iggy 0.8"},
		{"0.9 on 0.10", v10, vsr.V011, "0.9", "Iggy 0.10"},
		{"0.10 on 0.9", v09, vsr.V012, "0.10", "Iggy 0.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Dial(context.Background(), Config{Address: tc.srv.addr(), Username: "iggy", Password: "iggy", Dialect: tc.pin, ConnectTimeout: 2 * time.Second, Keepalive: -1})
			if time.Since(start) > 2*time.Second {
				t.Fatalf("took %s, more than the connect timeout", time.Since(start))
			}
			mustErr(t, err, ErrProtocolMismatch)
			if m, ok := contains(err.Error(), "is "+tc.config, tc.server); !ok {
				t.Fatalf("error %q does not name %q", err, m)
			}
		})
	}
}

func TestIncompatibleEvictionNamesTheRange(t *testing.T) {
	srv := startFake(t, func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
		return evict(h, vsr.EvictIncompatibleProtocol, vsr.Pack(0, 13, 0), vsr.Pack(0, 13, 4))
	})
	_, err := Dial(context.Background(), Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1})
	mustErr(t, err, ErrProtocolMismatch)
	if m, ok := contains(err.Error(), "[0.13.0, 0.13.4]"); !ok {
		t.Fatalf("error %q lacks %q", err, m)
	}
	if n := len(srv.received()); n != 1 {
		t.Fatalf("%d logins, want 1: an unknown protocol is not retried", n)
	}
}

// TestLoginRefusals: an eviction of the login says why and never shows the
// secret; one that refuses the credentials is ErrLoginRefused (the caller
// names the settings that hold them), one that refuses the login's form is not.
func TestLoginRefusals(t *testing.T) {
	for _, tc := range []struct {
		reason  vsr.EvictionReason
		cfg     Config
		want    string
		refused bool
	}{
		{vsr.EvictInvalidCredentials, Config{Username: "reader", Password: "pw-77-never-shown"}, "invalid credentials", true},
		{vsr.EvictInvalidToken, Config{Token: "tok-88-never-shown"}, "invalid personal access token", true},
		{vsr.EvictUserInactive, Config{Username: "reader", Password: "pw-77-never-shown"}, "user inactive", true},
		{vsr.EvictMalformedLogin, Config{Username: "reader", Password: "pw-77-never-shown"}, "malformed login", false},
	} {
		srv := startFake(t, func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte { return evict(h, tc.reason, 0, 0) })
		cfg := tc.cfg
		cfg.Address, cfg.Keepalive = srv.addr(), -1
		_, err := Dial(context.Background(), cfg)
		mustErr(t, err, ErrEvicted)
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "never-shown") {
			t.Fatalf("%s: error %q (must say %q and never show the secret)", tc.reason, err, tc.want)
		}
		if errors.Is(err, ErrLoginRefused) != tc.refused {
			t.Fatalf("%s: errors.Is(%q, ErrLoginRefused) = %v, want %v", tc.reason, err, !tc.refused, tc.refused)
		}
		if tc.cfg.Token != "" {
			l, err := vsr.DecodeLogin(srv.received()[0].body, vsr.V011)
			if err != nil || !l.PAT || l.Token != tc.cfg.Token {
				t.Fatalf("token login body %+v %v", l, err)
			}
		}
	}
}

// TestLoginRefusedByStatus: a server may refuse a login with an error code
// (in the header or the result section) instead of an eviction; credential
// codes are ErrLoginRefused, others (a malformed body) are not.
func TestLoginRefusedByStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reply   func(h vsr.RequestHeader) []byte
		refused bool
	}{
		{"header 42", func(h vsr.RequestHeader) []byte { return replyTo(vsr.V011, h, vsr.StatusInvalidCredentials, nil) }, true},
		{"result 42", func(h vsr.RequestHeader) []byte {
			return replyTo(vsr.V011, h, 0, vsr.AppendResultError(nil, vsr.StatusInvalidCredentials))
		}, true},
		{"header 4", func(h vsr.RequestHeader) []byte { return replyTo(vsr.V011, h, vsr.StatusInvalidFormat, nil) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startFake(t, func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte { return tc.reply(h) })
			_, err := Dial(context.Background(), Config{Address: srv.addr(), Username: "reader", Password: "pw-99-never-shown", Dialect: vsr.V011, Keepalive: -1})
			if err == nil || strings.Contains(err.Error(), "never-shown") {
				t.Fatalf("Dial = %v, want a refusal that never shows the password", err)
			}
			if errors.Is(err, ErrLoginRefused) != tc.refused {
				t.Fatalf("errors.Is(%q, ErrLoginRefused) = %v, want %v", err, !tc.refused, tc.refused)
			}
		})
	}
}

func TestHugeReplyRefusedBeforeAllocation(t *testing.T) {
	srv := startFake(t, serverOf(vsr.V011, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodeGetStream: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			rh := vsr.ReplyHeader{Size: 0xFFFFFFFF, Client: h.Client, Request: h.Request, Operation: h.Operation}
			return vsr.AppendReplyHeader(nil, vsr.V011, &rh) // claims 4 GiB and sends none of it
		},
	}))
	ctx := context.Background()
	c, err := Dial(ctx, Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, _, err = c.GetStream(ctx, vsr.NamedID("s"))
	runtime.ReadMemStats(&after)
	var tl *vsr.TooLargeError
	if !errors.As(err, &tl) || tl.Size != 0xFFFFFFFF || !errors.Is(err, ErrMalformedReply) || !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("4 GiB reply: %v, want a TooLargeError that cuts the connection", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("refusal took %s: it waited for the body", took)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("allocated %d bytes on the way to refusing", grew)
	}
	if !c.Lost() {
		t.Fatal("connection still in use after a refused frame")
	}
}

func TestRequestTimeoutCutsAStall(t *testing.T) {
	srv := startFake(t, serverOf(vsr.V011, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodeGetStream: func(*fakeConn, vsr.RequestHeader, []byte) []byte { return nil }, // never answers
	}))
	ctx := context.Background()
	c, err := Dial(ctx, Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1, RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _, err = c.GetStream(ctx, vsr.NamedID("s"))
	if took := time.Since(start); took > 2*time.Second || !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("stalled call: %v after %s, want ErrTimeout soon after 300ms", err, took)
	}
	if _, _, err := c.GetStream(ctx, vsr.NamedID("s")); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("a call after the cut: %v", err)
	}
	// A caller's context ends a call the same way.
	c2, err := Dial(ctx, Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, _, err := c2.GetStream(short, vsr.NamedID("s")); !errors.Is(err, ErrConnectionLost) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call past its context: %v", err)
	}
}

func TestKeepalivePingsAnIdleConnection(t *testing.T) {
	srv := startFake(t, serverOf(vsr.V011, nil))
	c, err := Dial(context.Background(), Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	c.Close()
	var pings []time.Time
	for _, r := range srv.received() {
		if r.hdr.Operation == vsr.OpNonReplicated && r.hdr.Code == vsr.CodePing {
			pings = append(pings, r.at)
		}
	}
	if len(pings) < 3 {
		t.Fatalf("%d pings in 700ms of silence with a 100ms keepalive", len(pings))
	}
	for i := 1; i < len(pings); i++ {
		if gap := pings[i].Sub(pings[i-1]); gap > 400*time.Millisecond {
			t.Fatalf("pings %s apart", gap)
		}
	}
}

func TestMalformedRepliesAreErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"short stream record", []byte{1, 2, 3}},
		{"topic count beyond body", vsr.AppendStream(nil, vsr.V011, &vsr.Stream{ID: 1, Name: "s", TopicsCount: 5})},
		{"trailing bytes", append(vsr.AppendStream(nil, vsr.V011, &vsr.Stream{ID: 1, Name: "s"}), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startFake(t, serverOf(vsr.V011, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
				vsr.CodeGetStream: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte { return replyTo(vsr.V011, h, 0, tc.body) },
			}))
			c, err := Dial(context.Background(), Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _, err = c.GetStream(context.Background(), vsr.NamedID("s"))
			mustErr(t, err, ErrMalformedReply)
			if !strings.Contains(err.Error(), "get stream") {
				t.Fatalf("error %q does not name the command", err)
			}
		})
	}
}

func TestReplyToAnotherRequestIsRefused(t *testing.T) {
	srv := startFake(t, serverOf(vsr.V011, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodeGetStream: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			h.Request += 5
			return replyTo(vsr.V011, h, 0, nil)
		},
	}))
	c, err := Dial(context.Background(), Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = c.GetStream(context.Background(), vsr.NamedID("s"))
	mustErr(t, err, ErrMalformedReply)
}

// TestTransientRefusalsAreReplayed: a server that has not committed a
// request yet (57) gets the same request again, same number and body, until
// it answers.
func TestTransientRefusalsAreReplayed(t *testing.T) {
	var refusals int
	srv := startFake(t, serverOf(vsr.V011, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodeJoinGroup: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			if refusals < 3 {
				refusals++
				if refusals == 2 { // in the result section, as a real 0.9 server answers a join
					return replyTo(vsr.V011, h, 0, vsr.AppendResultError(nil, vsr.StatusTransientNotCommitted))
				}
				return replyTo(vsr.V011, h, vsr.StatusTransientNotCommitted, nil)
			}
			return replyTo(vsr.V011, h, 0, vsr.AppendResultOK(nil))
		},
	}))
	c, err := Dial(context.Background(), Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1, RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := vsr.GroupRef{Stream: vsr.NamedID("s"), Topic: vsr.NamedID("t"), Group: vsr.NamedID("g")}
	if err := c.JoinGroup(context.Background(), g); err != nil {
		t.Fatalf("join after three 57s: %v", err)
	}
	var joins []fakeRequest
	for _, r := range srv.received() {
		if r.hdr.Operation == vsr.OpJoinGroup {
			joins = append(joins, r)
		}
	}
	if len(joins) != 4 {
		t.Fatalf("%d join requests, want 4", len(joins))
	}
	for _, j := range joins[1:] {
		if j.hdr.Request != joins[0].hdr.Request || j.hdr.RequestChecksum != joins[0].hdr.RequestChecksum || string(j.body) != string(joins[0].body) {
			t.Fatalf("a replay differs: request %d vs %d", j.hdr.Request, joins[0].hdr.Request)
		}
	}
}

// TestCancelledCallsKeepTheConnection: calls share one connection, so a
// caller whose context ends must not take it from the others: a call that
// ends before its turn sends nothing, and a reply that comes soon after a
// cancel is read, leaving the connection in step.
func TestCancelledCallsKeepTheConnection(t *testing.T) {
	slow := make(chan struct{})
	srv := startFake(t, serverOf(vsr.V011, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodeGetStream: func(_ *fakeConn, h vsr.RequestHeader, body []byte) []byte {
			if string(body[2:]) == "slow" {
				<-slow // answers once the caller has given up
			}
			return replyTo(vsr.V011, h, 0, nil)
		},
	}))
	ctx := context.Background()
	c, err := Dial(ctx, Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := c.GetStream(done, vsr.NamedID("s")); !errors.Is(err, context.Canceled) || errors.Is(err, ErrConnectionLost) {
		t.Fatalf("a call whose context had ended: %v, want context.Canceled and the connection kept", err)
	}
	short, cancel2 := context.WithCancel(ctx)
	go func() { time.Sleep(100 * time.Millisecond); cancel2(); time.Sleep(100 * time.Millisecond); close(slow) }()
	if _, _, err := c.GetStream(short, vsr.NamedID("slow")); err != nil {
		t.Fatalf("a reply that came 100ms after the cancel: %v, want it read", err)
	}
	if _, _, err := c.GetStream(ctx, vsr.NamedID("s")); err != nil || c.Lost() {
		t.Fatalf("the next call: %v (lost %v)", err, c.Lost())
	}
}

// A reply within the protocol's frame limit but above MaxReply is read
// past, not kept: the call fails with ReplyTooLargeError carrying the
// reply's start, and the connection answers the next call.
func TestLargeReplySkippedConnectionKept(t *testing.T) {
	var calls atomic.Int32
	srv := startFake(t, serverOf(vsr.V011, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodeGetStream: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			if calls.Add(1) == 1 {
				body := bytes.Repeat([]byte{7}, 300<<10)
				body[0] = 42
				return replyTo(vsr.V011, h, 0, body)
			}
			return replyTo(vsr.V011, h, 0, nil)
		},
	}))
	ctx := context.Background()
	c, err := Dial(ctx, Config{Address: srv.addr(), Username: "iggy", Password: "iggy", Keepalive: -1, RequestTimeout: 10 * time.Second, MaxReply: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = c.GetStream(ctx, vsr.NamedID("s"))
	var tl *ReplyTooLargeError
	if !errors.As(err, &tl) || tl.Size != uint32(vsr.HeaderSize+300<<10) || tl.Limit != 64<<10 || len(tl.Prefix) != vsr.PollPeekSize || tl.Prefix[0] != 42 {
		t.Fatalf("large reply: %v, want a ReplyTooLargeError with the reply's start", err)
	}
	if errors.Is(err, ErrConnectionLost) {
		t.Fatalf("large reply cut the connection: %v", err)
	}
	if _, _, err := c.GetStream(ctx, vsr.NamedID("s")); err != nil {
		t.Fatalf("the call after the skipped reply: %v", err)
	}
}

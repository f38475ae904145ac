package source

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyfake"
)

// loginOK answers a login with user id 0, the rest with an empty OK
// (which the SDK reads as "not found" for streams and topics).
func loginOK(meta []byte) func(req iggyfake.Request) iggyfake.Reply {
	return func(req iggyfake.Request) iggyfake.Reply {
		switch req.Code {
		case iggyfake.CodeLoginUser, iggyfake.CodeLoginPAT:
			return iggyfake.Reply{Payload: []byte{0, 0, 0, 0}}
		case iggyfake.CodeClusterMetadata:
			if meta != nil {
				return iggyfake.Reply{Payload: meta}
			}
		}
		return iggyfake.Reply{}
	}
}

// TestMalformedLoginReplyIsAnError (issue 15 item 1): a 2-byte login reply
// made SDK v0.8.0 panic inside the sink's call goroutine; it is an error
// naming the command, and the process lives on.
func TestMalformedLoginReplyIsAnError(t *testing.T) {
	srv := iggyfake.StartServer(t, nil, func(req iggyfake.Request) iggyfake.Reply {
		return iggyfake.Reply{Payload: []byte{1, 0}}
	})
	for _, cfg := range []Config{
		{Address: srv.Addr(), Username: "iggy", Password: "iggy", Protocol: Protocol08},
		{Address: srv.Addr(), Token: "tok", Protocol: Protocol08},
	} {
		_, err := Open(context.Background(), cfg)
		if !errors.Is(err, ErrMalformedReply) || !strings.Contains(err.Error(), "login") {
			t.Fatalf("2-byte login reply: %v, want ErrMalformedReply naming the login", err)
		}
	}
}

// TestMalformedPollReplyIsAnError (issue 15 item 1): poll replies whose
// user-header length runs past the frame, or that are shorter than their
// header, are errors naming the command and partition; the connection is
// cut and every later call says so.
func TestMalformedPollReplyIsAnError(t *testing.T) {
	b := startBroker(t)
	if err := b.Seed("app", "logs", 2, 20); err != nil {
		t.Fatal(err)
	}
	for name, tamper := range map[string]func([]byte) []byte{
		"user-header length past the frame": func(p []byte) []byte {
			binary.LittleEndian.PutUint32(p[16+48:], 1<<20)
			return p
		},
		"shorter than its header": func(p []byte) []byte { return p[:5] },
	} {
		t.Run(name, func(t *testing.T) {
			proxy := iggyfake.StartProxy(t, b.Addr(), func(req iggyfake.Request, rep iggyfake.Reply) iggyfake.Reply {
				if req.Code == iggyfake.CodePollMessages && len(rep.Payload) > 16+iggcon.MessageHeaderSize {
					rep.Payload = tamper(rep.Payload)
				}
				return rep
			})
			ctx := context.Background()
			c, tp := openTopic(t, Config{Address: proxy.Addr(), Username: "iggy", Password: "iggy", Protocol: Protocol08}, true)
			_, owned, err := c.Poll(ctx, tp, 1, 0, 10, nil)
			for i := 0; err == nil && !owned && i < 200; i++ {
				// The group has not given this member the partition yet: the
				// reply held no message to tamper with.
				time.Sleep(10 * time.Millisecond)
				_, owned, err = c.Poll(ctx, tp, 1, 0, 10, nil)
			}
			if !errors.Is(err, ErrMalformedReply) || !errors.Is(err, ErrConnectionLost) {
				t.Fatalf("Poll = %v, want ErrMalformedReply and ErrConnectionLost", err)
			}
			for _, w := range []string{"poll", "app/logs", "partition 1"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
			if !c.Lost() {
				t.Fatal("connection not cut after a malformed reply")
			}
			if _, _, err := c.StoredOffset(ctx, tp, 0); !errors.Is(err, ErrConnectionLost) {
				t.Fatalf("call after the malformed reply: %v", err)
			}
		})
	}
}

// clusterMetadata encodes a reply to GetClusterMetadata.
func clusterMetadata(t *testing.T, nodes ...iggcon.ClusterNode) []byte {
	t.Helper()
	m := iggcon.ClusterMetadata{Name: "prod-cluster", Nodes: nodes}
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func node(name, hostPort string, role iggcon.ClusterNodeRole) iggcon.ClusterNode {
	host, port, _ := strings.Cut(hostPort, ":")
	var p uint16
	for _, c := range port {
		p = p*10 + uint16(c-'0')
	}
	return iggcon.ClusterNode{Name: name, IP: host, Endpoints: iggcon.TransportEndpoints{Tcp: p}, Role: role, Status: iggcon.Healthy}
}

// TestLeaderRedirectRefused (issue 15 item 2): a server whose cluster
// metadata names another node as leader made the SDK dial that node itself,
// in plain TCP even with TLS on, and log in again there. The sink refuses,
// naming the leader; the would-be leader receives nothing.
func TestLeaderRedirectRefused(t *testing.T) {
	caFile, serverTLS := selfSigned(t)
	const password = "pw-never-in-clear-5150"
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"plain", false}, {"TLS", true}} {
		t.Run(tc.name, func(t *testing.T) {
			leader := iggyfake.StartRecorder(t, nil)
			var srvTLS *tls.Config
			if tc.tls {
				srvTLS = serverTLS
			}
			meta := clusterMetadata(t, node("follower-1", "127.0.0.1:1", iggcon.RoleFollower), node("leader-2", leader.Addr(), iggcon.RoleLeader))
			srv := iggyfake.StartServer(t, srvTLS, loginOK(meta))
			cfg := Config{Address: srv.Addr(), Username: "sink", Password: password, TLS: tc.tls, ConnectTimeout: 3 * time.Second, Protocol: Protocol08}
			if tc.tls {
				cfg.TLSCAFile = caFile
			}
			start := time.Now()
			_, err := Open(context.Background(), cfg)
			took := time.Since(start)
			time.Sleep(600 * time.Millisecond) // anything sent would have arrived
			got, conns := leader.Received()
			if conns != 0 || bytes.Contains(got, []byte(password)) {
				t.Fatalf("the would-be leader got %d plain-TCP connection(s) and %q (Open: %v)", conns, got, err)
			}
			if !errors.Is(err, ErrLeaderRedirect) || !strings.Contains(err.Error(), leader.Addr()) || !strings.Contains(err.Error(), `"leader-2"`) {
				t.Fatalf("Open = %v, want ErrLeaderRedirect naming the leader and its address", err)
			}
			if strings.Contains(err.Error(), password) {
				t.Fatalf("error shows the password: %v", err)
			}
			if took > 3*time.Second {
				t.Fatalf("refusal took %s", took)
			}
		})
	}
}

// TestLeaderIsThisServer: metadata naming the server itself as leader
// (several nodes) is not a redirect; the connection stays usable.
func TestLeaderIsThisServer(t *testing.T) {
	var meta []byte
	srv := iggyfake.StartServer(t, nil, func(req iggyfake.Request) iggyfake.Reply { return loginOK(meta)(req) })
	meta = clusterMetadata(t, node("me", srv.Addr(), iggcon.RoleLeader), node("other", "127.0.0.1:1", iggcon.RoleFollower))
	ctx := context.Background()
	c, err := Open(ctx, Config{Address: srv.Addr(), Username: "iggy", Password: "iggy", Protocol: Protocol08})
	if err != nil {
		t.Fatalf("Open against the leader itself: %v", err)
	}
	defer c.Close()
	if _, err := c.Topic(ctx, "app", "logs", "g"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a call after login: %v, want the fake's not-found", err)
	}
}

// TestStallAfterLoginEndsWithinRequestTimeout (issue 15 item 4): a server
// that stops answering after login no longer hangs a call: it ends at
// request_timeout with an error naming the command and the setting.
func TestStallAfterLoginEndsWithinRequestTimeout(t *testing.T) {
	b := startBroker(t)
	if err := b.Seed("app", "logs", 1, 5); err != nil {
		t.Fatal(err)
	}
	proxy := iggyfake.StartProxy(t, b.Addr(), func(req iggyfake.Request, rep iggyfake.Reply) iggyfake.Reply {
		if req.Code != iggyfake.CodeLoginUser && req.Code != iggyfake.CodeClusterMetadata {
			rep.Stall = true
		}
		return rep
	})
	ctx := context.Background()
	c, err := Open(ctx, Config{Address: proxy.Addr(), Username: "iggy", Password: "iggy", RequestTimeout: 500 * time.Millisecond, Protocol: Protocol08})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Topic(ctx, "app", "logs", "g")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("stalled call returned after %s", d)
	}
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "get stream") || !strings.Contains(err.Error(), "iggy.request_timeout") {
		t.Fatalf("stalled call: %v, want ErrTimeout naming the command and iggy.request_timeout", err)
	}
}

// TestTopicsResolveToIDAndName (issue 15 item 5): a topic given by id and
// the same topic by name resolve to one (id, name) and are refused as a
// duplicate; keys and records get the server's names; "name:1" reaches a
// topic literally named 1.
func TestTopicsResolveToIDAndName(t *testing.T) {
	b := startBroker(t)
	for _, name := range []string{"x", "a_b", "1"} {
		if err := b.Seed("app", name, 1, 3); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	c, err := Open(ctx, Config{Address: b.Addr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	byName, err := c.Topic(ctx, "app", "a_b", "g")
	if err != nil {
		t.Fatal(err)
	}
	byID, err := c.Topic(ctx, "app", "1", "g")
	if err != nil {
		t.Fatal(err)
	}
	if byID.Topic != "a_b" || byID.TopicID != byName.TopicID || byID.Stream != "app" {
		t.Fatalf("topic id 1 resolved to %q (id %d), a_b is id %d", byID.Topic, byID.TopicID, byName.TopicID)
	}
	err = CheckDistinct([]*Topic{byName, byID})
	var dup *DuplicateError
	if !errors.As(err, &dup) || !strings.Contains(err.Error(), `topic "a_b" and stream "app" topic id 1`) || !strings.Contains(err.Error(), "list each topic once") {
		t.Fatalf("CheckDistinct = %v, want a DuplicateError naming both", err)
	}
	literal, err := c.Topic(ctx, "app", "name:1", "g")
	if err != nil || literal.Topic != "1" || literal.TopicID == byName.TopicID {
		t.Fatalf(`"name:1" = %+v, %v; want the topic named 1`, literal, err)
	}
	if err := CheckDistinct([]*Topic{byName, literal}); err != nil {
		t.Fatalf("distinct topics refused: %v", err)
	}
	streamByID, err := c.Topic(ctx, "0", "a_b", "g")
	if err != nil || streamByID.Stream != "app" || streamByID.StreamRef != "0" {
		t.Fatalf("stream by id: %+v, %v", streamByID, err)
	}
	// The resolved topic is usable: joined by its ids, its partition polls.
	if err := c.Join(ctx, byID); err != nil {
		t.Fatal(err)
	}
	if msgs, owned, err := c.Poll(ctx, byID, 0, 0, 10, nil); err != nil || !owned || len(msgs) != 3 {
		t.Fatalf("poll through the resolved topic: %d messages, owned %v, %v", len(msgs), owned, err)
	}
}

package vsrconn

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

func node(replica uint8, addr string) vsr.Node {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return vsr.Node{ReplicaID: replica, Name: "node-" + strconv.Itoa(int(replica)), IP: host, TCP: uint16(p)}
}

// notPrimary scripts a 0.10 node that refuses partition requests as not
// their primary and routes them to replica primary, with nodes as its
// cluster metadata.
func notPrimary(primary uint8, nodes func() []vsr.Node) map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte {
	d := vsr.V012
	refuse := func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
		return replyTo(d, h, vsr.StatusNotPrimary, nil)
	}
	return map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodePoll:        refuse,
		vsr.CodeStoreOffset: refuse,
		vsr.CodePartitionRoute: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			return replyTo(d, h, 0, vsr.AppendRoute(nil, &vsr.Route{Incarnation: 3, PartitionsCount: 2, PrimaryReplica: primary}))
		},
		vsr.CodeClusterMetadata: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			return replyTo(d, h, 0, vsr.AppendCluster(nil, d, &vsr.Cluster{Name: "c", Nodes: nodes()}))
		},
	}
}

func groupPoll(p uint32) *vsr.Poll {
	return &vsr.Poll{Consumer: vsr.Consumer{Kind: vsr.ConsumerGroup, ID: vsr.NamedID("g")}, Stream: vsr.NumericID(0), Topic: vsr.NumericID(0),
		Partition: vsr.PartitionID(p), Strategy: vsr.AtOffset(0), Count: 10}
}

func TestRouteToANodeTheMetadataDoesNotListIsRefused(t *testing.T) {
	decoy := startFake(t, serverOf(vsr.V012, nil)) // listed without a TCP port: must not be dialed
	var self *fakeServer
	self = startFake(t, serverOf(vsr.V012, notPrimary(9, func() []vsr.Node {
		n := node(9, decoy.addr())
		n.TCP = 0
		return []vsr.Node{node(0, self.addr()), n}
	})))
	c, err := Dial(context.Background(), Config{Address: self.addr(), Username: "iggy", Password: "iggy", Dialect: vsr.V012, Keepalive: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Poll(context.Background(), groupPoll(1), &vsr.PartitionContext{Incarnation: 3})
	mustErr(t, err, ErrRouteRefused)
	if m, ok := contains(err.Error(), "replica 9", "partition 1"); !ok {
		t.Fatalf("error %q lacks %q", err, m)
	}
	time.Sleep(100 * time.Millisecond)
	if decoy.connections() != 0 || self.connections() != 1 {
		t.Fatalf("dialed: decoy %d, self %d connections", decoy.connections(), self.connections())
	}
}

func TestRouteToTheListedPrimaryBindsTheSession(t *testing.T) {
	d := vsr.V012
	primary := startFake(t, serverOf(d, map[uint32]func(*fakeConn, vsr.RequestHeader, []byte) []byte{
		vsr.CodeBindSession: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			return replyTo(d, h, 0, vsr.AppendLoginReply(nil, &vsr.LoginReply{Session: 7, ServerVersion: d.Version(), ServerName: "p"}))
		},
		vsr.CodePoll: func(_ *fakeConn, h vsr.RequestHeader, _ []byte) []byte {
			return replyTo(d, h, 0, vsr.AppendPollPrefix(nil, d, &vsr.PollReply{PartitionID: 1, Context: vsr.PartitionContext{Incarnation: 3}}))
		},
	}))
	var first *fakeServer
	first = startFake(t, serverOf(d, notPrimary(1, func() []vsr.Node { return []vsr.Node{node(0, first.addr()), node(1, primary.addr())} })))
	ctx := context.Background()
	c, err := Dial(ctx, Config{Address: first.addr(), Username: "iggy", Password: "iggy", Dialect: d, Keepalive: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 { // the second goes straight to the primary
		if rep, err := c.Poll(ctx, groupPoll(1), &vsr.PartitionContext{Incarnation: 3}); err != nil || rep.PartitionID != 1 {
			t.Fatalf("routed poll: %+v, %v", rep, err)
		}
	}
	login := first.received()[0]
	l, _ := vsr.DecodeLogin(login.body, d)
	got := primary.received()
	if len(got) != 3 || got[0].hdr.Code != vsr.CodeBindSession {
		t.Fatalf("the primary got %d requests, want bind + 2 polls", len(got))
	}
	b, err := vsr.DecodeBindSession(got[0].body)
	if err != nil || b.Client != login.hdr.Client || b.Session != 7 || b.BindSecret != l.BindSecret {
		t.Fatalf("bind session %+v, %v: want the login's client id, session 7 and bind secret", b, err)
	}
	for _, r := range got[1:] {
		if r.hdr.Client != login.hdr.Client || r.hdr.PartitionIncarnation != 3 {
			t.Fatalf("routed poll header %+v", r.hdr)
		}
	}
	polls := 0
	for _, r := range first.received() {
		if r.hdr.Code == vsr.CodePoll {
			polls++
		}
	}
	if polls != 1 {
		t.Fatalf("the first node got %d polls, want 1 (then the route is kept)", polls)
	}
}

package iggytest_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

var dialects = []vsr.Dialect{vsr.V011, vsr.V012}

func TestVSRLoginGates(t *testing.T) {
	v := vsr.Pack
	type want struct {
		ok     bool
		reason vsr.EvictionReason
		lo, hi vsr.Version // the eviction's window for reason 14
		server vsr.Version // the login reply's version
	}
	ok := func(s vsr.Version) want { return want{ok: true, server: s} }
	gate := func(lo, hi vsr.Version) want { return want{reason: vsr.EvictIncompatibleProtocol, lo: lo, hi: hi} }
	tests := []struct {
		pin     string
		d       vsr.Dialect // the layout the client sends
		version vsr.Version
		want    want
	}{
		{"", vsr.V011, v(0, 11, 0), ok(v(0, 11, 0))},
		{"", vsr.V011, v(0, 11, 7), ok(v(0, 11, 0))},
		{"", vsr.V012, v(0, 12, 0), ok(v(0, 12, 0))},
		{"", vsr.V012, v(0, 12, 2), gate(v(0, 11, 0), v(0, 12, 0))},
		{"", vsr.V012, v(0, 13, 0), gate(v(0, 11, 0), v(0, 12, 0))},
		{"", vsr.V011, v(0, 10, 0), gate(v(0, 11, 0), v(0, 12, 0))},
		{"0.9", vsr.V011, v(0, 11, 0), ok(v(0, 11, 0))},
		{"0.9", vsr.V011, v(0, 11, 3), ok(v(0, 11, 0))},
		{"0.9", vsr.V012, v(0, 12, 0), gate(v(0, 11, 0), v(0, 11, 0))},
		{"0.9", vsr.V011, v(0, 10, 9), gate(v(0, 11, 0), v(0, 11, 0))},
		{"0.10", vsr.V012, v(0, 12, 0), ok(v(0, 12, 0))},
		{"0.10", vsr.V011, v(0, 11, 0), gate(v(0, 12, 0), v(0, 12, 0))},
		{"0.10", vsr.V012, v(0, 12, 1), gate(v(0, 12, 0), v(0, 12, 0))},
	}
	for _, tc := range tests {
		t.Run(tc.pin+"/"+tc.version.String(), func(t *testing.T) {
			b := startBroker(t, iggytest.WithProtocol(tc.pin))
			c := dialVSR(t, b.Addr(), tc.d)
			r := c.login(tc.version, "iggy", "iggy")
			if tc.want.ok {
				if r.evict != nil || r.h.Status != 0 {
					t.Fatalf("login refused: eviction %+v status %d", r.evict, r.h.Status)
				}
				lr, err := vsr.DecodeLoginReply(r.body[4:])
				wantName := map[vsr.Version]string{v(0, 11, 0): "0.9.0", v(0, 12, 0): "0.10.0"}[tc.want.server]
				if err != nil || lr.ServerVersion != tc.want.server || lr.ServerName != wantName || lr.Session == 0 {
					t.Fatalf("login reply %+v, %v; want server %s %q", lr, err, tc.want.server, wantName)
				}
				if r.h.Operation != vsr.OpRegister || r.h.Request != 0 {
					t.Fatalf("login reply header %+v", r.h)
				}
				c.must(vsr.CodePing, nil)
				return
			}
			if r.evict == nil || r.evict.Reason != tc.want.reason || r.evict.ServerMin != tc.want.lo || r.evict.ServerMax != tc.want.hi {
				t.Fatalf("got %+v (status %d), want eviction %d with window [%s, %s]", r.evict, r.h.Status, tc.want.reason, tc.want.lo, tc.want.hi)
			}
		})
	}
}

func TestVSRLoginCredentials(t *testing.T) {
	b := startBroker(t)
	for _, d := range dialects {
		tests := []struct {
			name  string
			login vsr.Login
			want  vsr.EvictionReason // 0 = logged in
		}{
			{"password", vsr.Login{Username: "iggy", Password: "iggy"}, 0},
			{"bad password", vsr.Login{Username: "iggy", Password: "nope"}, vsr.EvictInvalidCredentials},
			{"unknown user", vsr.Login{Username: "root", Password: "iggy"}, vsr.EvictInvalidCredentials},
			{"token", vsr.Login{PAT: true, Token: testToken}, 0},
			{"bad token", vsr.Login{PAT: true, Token: "not-a-token"}, vsr.EvictInvalidToken},
		}
		for _, tc := range tests {
			t.Run(d.Server()+"/"+tc.name, func(t *testing.T) {
				c := dialVSR(t, b.Addr(), d)
				l := tc.login
				l.Version, l.SDKName, l.SDKVersion = d.Version(), "go-test", "1.0.0"
				r := c.register(&l)
				switch {
				case tc.want == 0 && (r.evict != nil || r.h.Status != 0):
					t.Fatalf("refused: %+v status %d", r.evict, r.h.Status)
				case tc.want != 0 && (r.evict == nil || r.evict.Reason != tc.want):
					t.Fatalf("got %+v status %d, want eviction %d", r.evict, r.h.Status, tc.want)
				}
			})
		}
		t.Run(d.Server()+"/malformed", func(t *testing.T) {
			c := dialVSR(t, b.Addr(), d)
			body := vsr.AppendLogin(nil, d, &vsr.Login{Version: d.Version(), SDKName: "x", SDKVersion: "1", Username: "iggy", Password: "iggy"})
			for _, bad := range [][]byte{body[:2], body[:len(body)-1], append(slices.Clone(body), 9)} {
				c.write(vsr.RequestHeader{Client: c.client, Operation: vsr.OpRegister}, bad)
				if r := c.read(); r.evict == nil || r.evict.Reason != vsr.EvictMalformedLogin {
					t.Fatalf("login body of %d bytes: %+v, want eviction 15", len(bad), r)
				}
			}
		})
	}
}

func TestVSRUnauthenticated(t *testing.T) {
	b := startBroker(t)
	c := dialVSR(t, b.Addr(), vsr.V011)
	// Ping is served before login.
	if r := c.do(vsr.CodePing, nil); r.evict != nil || r.h.Status != 0 || len(r.body) != 0 {
		t.Fatalf("pre-login ping: %+v", r)
	}
	// Other reads: status 40.
	for _, code := range []uint32{vsr.CodeGetStream, vsr.CodeClusterMetadata, vsr.CodePoll, vsr.CodeSyncGroup} {
		if r := c.do(code, []byte{2, 1, 's'}); r.evict != nil || r.h.Status != vsr.StatusUnauthenticated {
			t.Fatalf("pre-login %s: %+v, want status 40", vsr.CodeName(code), r)
		}
	}
	// A replicated operation naming a session the server does not know: eviction 1.
	c.session = 77
	if r := c.do(vsr.CodeCreateStream, vsr.AppendCreateStream(nil, "s", nil)); r.evict == nil || r.evict.Reason != vsr.EvictNoSession {
		t.Fatalf("pre-login create stream: %+v, want eviction 1", r)
	}
	c.session = 0
	// The legacy login codes as reads: eviction 15.
	if r := c.do(38, nil); r.evict == nil || r.evict.Reason != vsr.EvictMalformedLogin {
		t.Fatalf("legacy login code 38: %+v, want eviction 15", r)
	}
	// An invalid header (client 0, or a Register with a session) is dropped silently.
	c.write(vsr.RequestHeader{Operation: vsr.OpNonReplicated, Code: vsr.CodePing}, nil)
	c.write(vsr.RequestHeader{Client: c.client, Operation: vsr.OpRegister, Session: 3}, nil)
	c.write(vsr.RequestHeader{Client: c.client, Operation: 70, Session: 1, Request: 1}, nil)
	if r, err := c.readWithin(200 * time.Millisecond); err == nil {
		t.Fatalf("an invalid header was answered: %+v", r)
	}
	// The connection still works: log in, then the same read succeeds.
	if r := c.login(vsr.V011.Version(), "iggy", "iggy"); r.evict != nil {
		t.Fatalf("login after refusals: %+v", r)
	}
	if out := c.must(vsr.CodeGetStream, vsr.AppendIdentifier(nil, streamID("nope"))); len(out) != 0 {
		t.Fatalf("missing stream: %x, want an empty body", out)
	}
	if _, err := c.call(9999, nil); !vsr.IsStatus(err, vsr.StatusInvalidCommand) {
		t.Fatalf("unknown code: %v, want 3", err)
	}
	for _, code := range []uint32{vsr.CodePartitionRoute, vsr.CodeBindSession} { // 0.10 only
		if _, err := c.call(code, nil); !vsr.IsStatus(err, vsr.StatusInvalidCommand) {
			t.Fatalf("%s on 0.9: %v, want 3", vsr.CodeName(code), err)
		}
	}
	// 0.11 verifies a non-zero request checksum; 0.12 takes it as an identifier.
	body := vsr.AppendCreateStream(nil, "s1", nil)
	h := c.header(vsr.CodeCreateStream, body)
	h.RequestChecksum = vsr.U128From(12345)
	c.write(h, body)
	if r := c.read(); r.h.Status != vsr.StatusInvalidFormat {
		t.Fatalf("0.11 bad request checksum: status %d, want 4", r.h.Status)
	}
	c12 := loginVSR(t, b.Addr(), vsr.V012)
	h = c12.header(vsr.CodeCreateStream, body)
	h.RequestChecksum = vsr.U128From(12345)
	c12.write(h, body)
	if r := c12.read(); r.h.Status != 0 {
		t.Fatalf("0.12 request identifier: status %d", r.h.Status)
	}
	// Logout ends the session: reads are refused again.
	c.must(vsr.CodeLogout, nil)
	if r := c.do(vsr.CodeGetStream, vsr.AppendIdentifier(nil, streamID("s1"))); r.h.Status != vsr.StatusUnauthenticated {
		t.Fatalf("read after logout: %+v, want status 40", r)
	}
}

func TestVSRProtocolPins(t *testing.T) {
	vsrPing := vsr.AppendRequestHeader(nil, vsr.V011, &vsr.RequestHeader{Size: 256, Client: newClientID(), Operation: vsr.OpNonReplicated, Code: vsr.CodePing})
	legacyPing := []byte{4, 0, 0, 0, 1, 0, 0, 0}
	t.Run("0.8 answers a VSR header InvalidCommand", func(t *testing.T) {
		b := startBroker(t, iggytest.WithProtocol("0.8"))
		nc, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write(vsrPing[:8]); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 8)
		_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadFull(nc, got); err != nil || !bytes.Equal(got, []byte{3, 0, 0, 0, 0, 0, 0, 0}) {
			t.Fatalf("reply %x, %v; want status 3, length 0", got, err)
		}
	})
	for _, pin := range []string{"0.9", "0.10"} {
		t.Run(pin+" waits for 256 bytes of a legacy frame", func(t *testing.T) {
			b := startBroker(t, iggytest.WithProtocol(pin))
			nc, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(legacyPing); err != nil {
				t.Fatal(err)
			}
			_ = nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if n, err := nc.Read(make([]byte, 8)); err == nil {
				t.Fatalf("a legacy ping was answered with %d bytes", n)
			}
		})
	}
	t.Run("unpinned serves both over one state", func(t *testing.T) {
		tg := newTarget(t)
		tg.hooks(t)
		legacy := tg.login(t)
		f := newTopic(t, legacy, 2)
		send(t, legacy, f, iggcon.PartitionId(1), "from-0.8")
		for _, d := range dialects {
			c := loginVSR(t, tg.addr, d)
			c.send(f.stream, f.topic, 1, sendMsg{payload: "from-" + d.Server()})
		}
		c := loginVSR(t, tg.addr, vsr.V011)
		_, msgs := c.poll(f.stream, f.topic, single(1), 1, vsr.AtOffset(0), 10)
		if got := payloadsOf(msgs); !slices.Equal(got, []string{"from-0.8", "from-0.9", "from-0.10"}) {
			t.Fatalf("0.9 poll: %v", got)
		}
		pm, err := legacy.PollMessages(f.streamID, f.topicID, iggcon.NewSingleConsumer(id(t, uint32(1))), iggcon.OffsetPollingStrategy(0), 10, false, ptr(uint32(1)))
		if err != nil || !slices.Equal(payloads(pm), []string{"from-0.8", "from-0.9", "from-0.10"}) || !slices.Equal(offsets(pm), []uint64{0, 1, 2}) {
			t.Fatalf("0.8 poll: %v %v, %v", payloads(pm), offsets(pm), err)
		}
	})
}

func TestVSRStreamsTopicsGroups(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.Server(), func(t *testing.T) {
			b := startBroker(t)
			c := loginVSR(t, b.Addr(), d)
			str := func(s string) []byte { return []byte(s) }
			c.createStream("s")
			c.wantStatus("duplicate stream", vsr.CodeCreateStream, vsr.AppendCreateStream(nil, "s", nil), vsr.StatusStreamNameExists)
			durable := []vsr.Option{{Key: "durability", Kind: vsr.HeaderString, Value: str("replicated")},
				{Key: "consumer_offset_durability", Kind: vsr.HeaderString, Value: str("replicated")},
				{Key: "compression_algorithm", Kind: vsr.HeaderString, Value: str("gzip")},
				{Key: "message_expiry", Kind: vsr.HeaderString, Value: str("none")},
				{Key: "replication_factor", Kind: 9, Value: []byte{1}}}
			tp := c.createTopic("s", "t", 3, durable...)
			if tp.Name != "t" || tp.PartitionsCount != 3 || len(tp.Partitions) != 3 || tp.ID != 0 {
				t.Fatalf("created topic %+v", tp)
			}
			if d == vsr.V011 && (tp.Compression != 2 || tp.MessageExpiry != 0) {
				t.Fatalf("0.9 topic header: compression %d expiry %d", tp.Compression, tp.MessageExpiry)
			}
			if opts, err := vsr.ParseOptions(tp.Options); err != nil || len(opts) != len(durable) {
				t.Fatalf("topic options %+v, %v", opts, err)
			}
			topicBody := func(name string, opts ...vsr.Option) []byte {
				return vsr.AppendCreateTopic(nil, &vsr.CreateTopic{Stream: streamID("s"), Partitions: 1, Name: name, Options: opts})
			}
			c.wantStatus("unknown option", vsr.CodeCreateTopic, topicBody("u", vsr.Option{Key: "enforce_fsync", Kind: vsr.HeaderString, Value: str("true")}), vsr.StatusInvalidOption)
			c.wantStatus("bad compression", vsr.CodeCreateTopic, topicBody("u", vsr.Option{Key: "compression_algorithm", Kind: vsr.HeaderString, Value: str("lz4")}), vsr.StatusInvalidOption)
			c.wantStatus("duplicate topic", vsr.CodeCreateTopic, topicBody("t"), vsr.StatusTopicNameExists)
			c.wantStatus("topic in a missing stream", vsr.CodeCreateTopic,
				vsr.AppendCreateTopic(nil, &vsr.CreateTopic{Stream: streamID("nope"), Partitions: 1, Name: "t"}), vsr.StatusStreamNotFound)

			st, ok, err := vsr.DecodeStream(c.must(vsr.CodeGetStream, vsr.AppendIdentifier(nil, vsr.NumericID(0))), d)
			if err != nil || !ok || st.Name != "s" || len(st.Topics) != 1 || st.Topics[0].Name != "t" {
				t.Fatalf("get stream %+v, %v, %v", st, ok, err)
			}
			if _, ok := c.getTopic("s", "nope"); ok {
				t.Fatal("a missing topic was found")
			}
			if _, ok := c.getTopic("nope", "t"); ok {
				t.Fatal("a topic of a missing stream was found")
			}
			got, ok := c.getTopic("s", "t")
			if !ok || len(got.Partitions) != 3 {
				t.Fatalf("get topic %+v", got)
			}
			if d == vsr.V012 {
				for i, p := range got.Partitions {
					if p.Context.Incarnation == 0 || (i > 0 && p.Context.Incarnation == got.Partitions[i-1].Context.Incarnation) || !bytes.Equal(p.Members, []byte{0}) {
						t.Fatalf("partition %d context %+v members %v", i, p.Context, p.Members)
					}
				}
			}

			// Groups.
			create := vsr.AppendCreateGroup(nil, streamID("s"), streamID("t"), "g")
			g, ok, err := vsr.DecodeGroup(c.must(vsr.CodeCreateGroup, create))
			if err != nil || !ok || g.Name != "g" || g.PartitionsCount != 3 || g.MembersCount != 0 {
				t.Fatalf("create group reply %+v, %v", g, err)
			}
			c.wantStatus("duplicate group", vsr.CodeCreateGroup, create, vsr.StatusGroupNameExists)
			c.wantStatus("group of a missing topic", vsr.CodeCreateGroup, vsr.AppendCreateGroup(nil, streamID("s"), streamID("x"), "g"), vsr.StatusTopicNotFound)
			if out := c.must(vsr.CodeGetGroup, groupRef("s", "t", "nope")); len(out) != 0 {
				t.Fatalf("missing group: %x, want an empty body", out)
			}
			c.wantStatus("group of a missing stream", vsr.CodeGetGroup, groupRef("x", "t", "g"), vsr.StatusStreamNotFound)
			c.wantStatus("group of a missing topic", vsr.CodeGetGroup, groupRef("s", "x", "g"), vsr.StatusTopicNotFound)
			if _, member := c.sync("s", "t", "g"); member {
				t.Fatal("sync before join reported a membership")
			}
			c.wantStatus("leave before join", vsr.CodeLeaveGroup, groupRef("s", "t", "g"), vsr.StatusGroupMemberNotFound)
			c.wantStatus("join a missing group", vsr.CodeJoinGroup, groupRef("s", "t", "nope"), vsr.StatusGroupNotFound)
			c.must(vsr.CodeJoinGroup, groupRef("s", "t", "g"))
			gen, _ := b.GroupGeneration("s", "t", "g")
			c.must(vsr.CodeJoinGroup, groupRef("s", "t", "g")) // idempotent
			if again, _ := b.GroupGeneration("s", "t", "g"); again != gen {
				t.Fatalf("a repeated join changed the generation %d → %d", gen, again)
			}
			a, member := c.sync("s", "t", "g")
			if !member || a.Generation != gen || !slices.Equal(a.Partitions, []uint32{0, 1, 2}) {
				t.Fatalf("sync %+v, %v; want generation %d, [0 1 2]", a, member, gen)
			}
			g, _, _ = vsr.DecodeGroup(c.must(vsr.CodeGetGroup, groupRef("s", "t", "g")))
			if g.MembersCount != 1 || len(g.Members) != 1 || !slices.Equal(g.Members[0].Partitions, []uint32{0, 1, 2}) {
				t.Fatalf("get group %+v", g)
			}
			groups, err := vsr.DecodeGroups(c.must(vsr.CodeGetGroups, vsr.AppendTopicRef(nil, streamID("s"), streamID("t"))))
			if err != nil || len(groups) != 1 || groups[0].Name != "g" {
				t.Fatalf("get groups %+v, %v", groups, err)
			}
			c.must(vsr.CodeLeaveGroup, groupRef("s", "t", "g"))
			if _, member := c.sync("s", "t", "g"); member {
				t.Fatal("sync after leave reported a membership")
			}
			// Deletes (result-framed; not found in the result section).
			c.must(vsr.CodeDeleteTopic, vsr.AppendTopicRef(nil, streamID("s"), streamID("t")))
			if _, ok := c.getTopic("s", "t"); ok {
				t.Fatal("a deleted topic was found")
			}
			c.wantStatus("delete a missing topic", vsr.CodeDeleteTopic, vsr.AppendTopicRef(nil, streamID("s"), streamID("t")), vsr.StatusTopicNotFound)
			c.must(vsr.CodeDeleteStream, vsr.AppendIdentifier(nil, streamID("s")))
			c.wantStatus("delete a missing stream", vsr.CodeDeleteStream, vsr.AppendIdentifier(nil, streamID("s")), vsr.StatusStreamNotFound)
			cl, err := vsr.DecodeCluster(c.must(vsr.CodeClusterMetadata, nil), d)
			if err != nil || len(cl.Nodes) != 1 || cl.Nodes[0].Role != vsr.RoleLeader || cl.Nodes[0].TCP == 0 {
				t.Fatalf("cluster metadata %+v, %v", cl, err)
			}
		})
	}
}

func TestVSRSendPoll(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.Server(), func(t *testing.T) {
			b := startBroker(t)
			c := loginVSR(t, b.Addr(), d)
			c.createStream("s")
			c.createTopic("s", "t", 2)
			hdr := vsr.AppendHeader(nil, vsr.HeaderString, []byte("content-type"), vsr.HeaderString, []byte("text/plain"))
			if base := c.send("s", "t", 1, sendMsg{"a", hdr}, sendMsg{"b", nil}, sendMsg{"c", hdr}); base != 0 {
				t.Fatalf("first batch base %d", base)
			}
			if base := c.send("s", "t", 1, sendMsg{"d", nil}, sendMsg{"e", hdr}); base != 3 {
				t.Fatalf("second batch base %d", base)
			}
			if _, err := b.Append("s", "t", 1, []byte("f"), iggytest.SampleHeaders(2)); err != nil {
				t.Fatal(err)
			}
			c.useTopic("s", "t", 1)
			pr, msgs := c.poll("s", "t", single(1), 1, vsr.AtOffset(0), 100)
			if pr.PartitionID != 1 || pr.CurrentOffset != 5 || !slices.Equal(payloadsOf(msgs), []string{"a", "b", "c", "d", "e", "f"}) ||
				!slices.Equal(offsetsOf(msgs), []uint64{0, 1, 2, 3, 4, 5}) {
				t.Fatalf("poll %+v: %v %v", pr, payloadsOf(msgs), offsetsOf(msgs))
			}
			if !bytes.Equal(msgs[0].Headers, hdr) || len(msgs[1].Headers) != 0 || !bytes.Equal(msgs[5].Headers, iggytest.SampleHeaders(2)) {
				t.Fatalf("user headers %x / %x / %x", msgs[0].Headers, msgs[1].Headers, msgs[5].Headers)
			}
			if msgs[0].Timestamp != msgs[2].Timestamp || msgs[2].Timestamp >= msgs[3].Timestamp || msgs[1].OriginTimestamp != msgs[0].OriginTimestamp+1 {
				t.Fatalf("times: %+v", msgs[:4])
			}
			if d == vsr.V012 && pr.Context.Incarnation == 0 {
				t.Fatalf("0.12 poll context %+v", pr.Context)
			}
			if records := countRecords(t, pr.Records); records != 3 {
				t.Fatalf("%d batch records, want one per send batch (3)", records)
			}
			// From the middle of a batch: the record keeps the batch's base offset.
			pr, msgs = c.poll("s", "t", single(1), 1, vsr.AtOffset(1), 3)
			if !slices.Equal(offsetsOf(msgs), []uint64{1, 2, 3}) || le64(pr.Records[8:]) != 0 {
				t.Fatalf("poll from 1: %v, first record base %d", offsetsOf(msgs), le64(pr.Records[8:]))
			}
			// Strategies and stored offsets.
			if _, msgs = c.poll("s", "t", single(1), 1, vsr.Strategy{Kind: vsr.StrategyLast}, 2); !slices.Equal(offsetsOf(msgs), []uint64{4, 5}) {
				t.Fatalf("last 2: %v", offsetsOf(msgs))
			}
			if out := c.must(vsr.CodeGetOffset, offsetBody(vsr.CodeGetOffset, "s", "t", single(1), 1, 0)); len(out) != 0 {
				t.Fatalf("offset before any store: %x", out)
			}
			if err := c.store("s", "t", single(1), 1, 3); err != nil {
				t.Fatal(err)
			}
			so, ok, err := vsr.DecodeStoredOffset(c.must(vsr.CodeGetOffset, offsetBody(vsr.CodeGetOffset, "s", "t", single(1), 1, 0)))
			if err != nil || !ok || so.Stored != 3 || so.CurrentOffset != 5 || so.Partition != 1 {
				t.Fatalf("stored offset %+v, %v, %v", so, ok, err)
			}
			if _, msgs = c.poll("s", "t", single(1), 1, vsr.Strategy{Kind: vsr.StrategyNext}, 10); !slices.Equal(offsetsOf(msgs), []uint64{4, 5}) {
				t.Fatalf("next after 3: %v", offsetsOf(msgs))
			}
			if err := c.store("s", "t", single(1), 1, 6); !vsr.IsStatus(err, vsr.StatusInvalidOffset) {
				t.Fatalf("store above current offset: %v, want 4100", err)
			}
			c.useTopic("s", "t", 0)
			if err := c.store("s", "t", single(1), 0, 0); !vsr.IsStatus(err, vsr.StatusInvalidOffset) {
				t.Fatalf("store on an empty partition: %v, want 4100", err)
			}
			c.useTopic("s", "t", 1)
			c.must(vsr.CodeDeleteOffset, offsetBody(vsr.CodeDeleteOffset, "s", "t", single(1), 1, 0))
			c.wantStatus("delete again", vsr.CodeDeleteOffset, offsetBody(vsr.CodeDeleteOffset, "s", "t", single(1), 1, 0), vsr.StatusOffsetNotFound)
			c.useTopic("s", "t", 0)
			pr, msgs = c.poll("s", "t", single(1), 0, vsr.AtOffset(0), 10)
			if pr.PartitionID != 0 || pr.Count != 0 || len(msgs) != 0 {
				t.Fatalf("empty partition: %+v", pr)
			}
			// Send errors.
			if _, err := c.trySend("s", "t", 9, sendMsg{payload: "x"}); !vsr.IsStatus(err, vsr.StatusPartitionNotFound) {
				t.Fatalf("send to a missing partition: %v", err)
			}
			if _, err := c.trySend("nope", "t", 0, sendMsg{payload: "x"}); !vsr.IsStatus(err, vsr.StatusStreamNotFound) {
				t.Fatalf("send to a missing stream: %v", err)
			}
		})
	}
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func countRecords(t testing.TB, recs []byte) int {
	n := 0
	for pos := 0; pos < len(recs); n++ {
		pos += int(le64(recs[pos+32:]))
	}
	return n
}

// groupFixture: a topic with n partitions, m messages in each, and group "g".
func groupFixture(t testing.TB, b *iggytest.Broker, partitions uint32, messages int) {
	t.Helper()
	if _, err := b.CreateStream("s"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("s", "t", int(partitions)); err != nil {
		t.Fatal(err)
	}
	for p := range partitions {
		for i := range messages {
			if _, err := b.Append("s", "t", p, []byte{byte('a' + i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := loginVSR(t, b.Addr(), vsr.V011)
	c.must(vsr.CodeCreateGroup, vsr.AppendCreateGroup(nil, streamID("s"), streamID("t"), "g"))
}

func (c *vsrClient) join() {
	c.t.Helper()
	c.must(vsr.CodeJoinGroup, groupRef("s", "t", "g"))
}

func (c *vsrClient) mine() vsr.Assignment {
	c.t.Helper()
	a, member := c.sync("s", "t", "g")
	if !member {
		c.t.Fatal("sync: not a member")
	}
	return a
}

func TestVSRGroupSyncAndFences(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.Server(), func(t *testing.T) {
			b := startBroker(t)
			groupFixture(t, b, 4, 3)
			a, c := loginVSR(t, b.Addr(), d), loginVSR(t, b.Addr(), d)
			a.join()
			ga := a.mine()
			if !slices.Equal(ga.Partitions, []uint32{0, 1, 2, 3}) || ga.Generation == 0 {
				t.Fatalf("lone member: %+v", ga)
			}
			c.join() // a never polled: the excess moves at once, evenly
			gb, gc := a.mine(), c.mine()
			if gb.Generation <= ga.Generation || gb.Generation != gc.Generation {
				t.Fatalf("generations %d → %d / %d", ga.Generation, gb.Generation, gc.Generation)
			}
			if !slices.Equal(gb.Partitions, []uint32{0, 1}) || !slices.Equal(gc.Partitions, []uint32{2, 3}) {
				t.Fatalf("assignment a %v c %v", gb.Partitions, gc.Partitions)
			}
			// Poll fence: a partition of another member answers the resync sentinel.
			a.useTopic("s", "t", 2)
			pr, _ := a.poll("s", "t", groupConsumer("g"), 2, vsr.AtOffset(0), 10)
			if !pr.Resync() || pr.Count != 0 || pr.Context != (vsr.PartitionContext{}) {
				t.Fatalf("poll of a non-owned partition: %+v, want the sentinel", pr)
			}
			// Store fence: 5009, and the attempt is recorded.
			if err := a.store("s", "t", groupConsumer("g"), 2, 1); !vsr.IsStatus(err, vsr.StatusPartitionNotOwned) {
				t.Fatalf("store on a non-owned partition: %v, want 5009", err)
			}
			if err := a.store("s", "t", groupConsumer("nope"), 2, 1); !vsr.IsStatus(err, vsr.StatusGroupNotFound) {
				t.Fatalf("store for a missing group: %v, want 5000", err)
			}
			stores := b.OffsetStores()
			if len(stores) != 2 || stores[0].Status != vsr.StatusPartitionNotOwned || stores[0].Client != a.client || stores[0].Group != "g" || stores[0].Partition != 2 {
				t.Fatalf("offset stores %+v", stores)
			}
			// The owner polls and stores.
			a.useTopic("s", "t", 0)
			pr, msgs := a.poll("s", "t", groupConsumer("g"), 0, vsr.Strategy{Kind: vsr.StrategyNext}, 10)
			if pr.PartitionID != 0 || !slices.Equal(offsetsOf(msgs), []uint64{0, 1, 2}) {
				t.Fatalf("owner poll %+v %v", pr, offsetsOf(msgs))
			}
			if d == vsr.V012 && pr.Context.OwnerGeneration == 0 {
				t.Fatalf("0.12 group poll context %+v", pr.Context)
			}
			if err := a.store("s", "t", groupConsumer("g"), 0, 2); err != nil {
				t.Fatal(err)
			}
			if off, ok := b.GroupOffset("s", "t", "g", 0); !ok || off != 2 {
				t.Fatalf("group offset %d, %v", off, ok)
			}
			// A group poll or offset write without a partition.
			out := a.must(vsr.CodePoll, vsr.AppendPoll(nil, &vsr.Poll{Consumer: groupConsumer("g"), Stream: streamID("s"), Topic: streamID("t"),
				Strategy: vsr.AtOffset(0), Count: 10}))
			if len(out) != vsr.PollPrefixSize(d) || !bytes.Equal(out, make([]byte, vsr.PollPrefixSize(d))) {
				t.Fatalf("group poll without a partition: %x, want the empty prefix of partition 0", out)
			}
			a.wantStatus("group store without a partition", vsr.CodeStoreOffset, vsr.AppendOffset(nil, vsr.CodeStoreOffset,
				&vsr.Offset{Consumer: groupConsumer("g"), Stream: streamID("s"), Topic: streamID("t"), Offset: 1, Ack: 1}), vsr.StatusInvalidIdentifier)
			// A non-member is fenced too.
			x := loginVSR(t, b.Addr(), d)
			x.useTopic("s", "t", 0)
			if pr, _ := x.poll("s", "t", groupConsumer("g"), 0, vsr.AtOffset(0), 10); !pr.Resync() {
				t.Fatalf("non-member poll: %+v", pr)
			}
			if err := x.store("s", "t", groupConsumer("g"), 0, 1); !vsr.IsStatus(err, vsr.StatusPartitionNotOwned) {
				t.Fatalf("non-member store: %v", err)
			}
			// GetConsumerOffset needs no membership.
			so, ok, _ := vsr.DecodeStoredOffset(x.must(vsr.CodeGetOffset, offsetBody(vsr.CodeGetOffset, "s", "t", groupConsumer("g"), 0, 0)))
			if !ok || so.Stored != 2 {
				t.Fatalf("non-member get offset %+v", so)
			}
			// Leave: an eager full round-robin rebalance.
			before, _ := b.GroupGeneration("s", "t", "g")
			a.must(vsr.CodeLeaveGroup, groupRef("s", "t", "g"))
			if gc = c.mine(); !slices.Equal(gc.Partitions, []uint32{0, 1, 2, 3}) || gc.Generation <= before {
				t.Fatalf("after leave: %+v (generation before %d)", gc, before)
			}
		})
	}
}

func TestVSRPendingRevocation(t *testing.T) {
	b := startBroker(t)
	groupFixture(t, b, 2, 5)
	a := loginVSR(t, b.Addr(), vsr.V011)
	a.join()
	// a polls partition 1 up to offset 4 and commits only 1.
	if _, msgs := a.poll("s", "t", groupConsumer("g"), 1, vsr.AtOffset(0), 5); len(msgs) != 5 {
		t.Fatalf("polled %d", len(msgs))
	}
	if err := a.store("s", "t", groupConsumer("g"), 1, 1); err != nil {
		t.Fatal(err)
	}
	c := loginVSR(t, b.Addr(), vsr.V011)
	c.join()
	members, err := b.GroupMembers("s", "t", "g")
	if err != nil || len(members) != 2 || !slices.Equal(members[0].Revoking, []uint32{1}) || !slices.Equal(members[1].Awaiting, []uint32{1}) {
		t.Fatalf("members %+v, %v; want partition 1 pending from a to c", members, err)
	}
	ga, gc := a.mine(), c.mine()
	if !slices.Equal(ga.Partitions, []uint32{0}) || len(gc.Partitions) != 0 {
		t.Fatalf("sync during the hand-over: a %v c %v; want a [0] (1 is not pollable), c []", ga.Partitions, gc.Partitions)
	}
	if pr, _ := a.poll("s", "t", groupConsumer("g"), 1, vsr.AtOffset(5), 5); !pr.Resync() {
		t.Fatalf("poll of a partition pending revocation: %+v, want the sentinel", pr)
	}
	if pr, _ := c.poll("s", "t", groupConsumer("g"), 1, vsr.AtOffset(0), 5); !pr.Resync() {
		t.Fatalf("poll by the awaiting member: %+v, want the sentinel", pr)
	}
	if err := c.store("s", "t", groupConsumer("g"), 1, 2); !vsr.IsStatus(err, vsr.StatusPartitionNotOwned) {
		t.Fatalf("store by the awaiting member: %v, want 5009", err)
	}
	// The old owner may still commit: reaching its last poll completes the hand-over.
	if err := a.store("s", "t", groupConsumer("g"), 1, 3); err != nil {
		t.Fatalf("store while pending: %v", err)
	}
	if members, _ := b.GroupMembers("s", "t", "g"); len(members[0].Revoking) != 1 {
		t.Fatalf("hand-over completed before the commit reached the last poll: %+v", members)
	}
	if err := a.store("s", "t", groupConsumer("g"), 1, 4); err != nil {
		t.Fatalf("final store while pending: %v", err)
	}
	if gc2 := c.mine(); !slices.Equal(gc2.Partitions, []uint32{1}) || gc2.Generation <= gc.Generation {
		t.Fatalf("after the hand-over: c %+v (was generation %d)", gc2, gc.Generation)
	}
	if err := a.store("s", "t", groupConsumer("g"), 1, 4); !vsr.IsStatus(err, vsr.StatusPartitionNotOwned) {
		t.Fatalf("store after losing the partition: %v, want 5009", err)
	}
	// No store by a member that had lost the partition was accepted.
	for _, s := range b.OffsetStores() {
		if s.Partition == 1 && s.Status == 0 && s.Client != a.client {
			t.Fatalf("accepted store by another member: %+v", s)
		}
	}
	last := b.OffsetStores()[len(b.OffsetStores())-1]
	if last.Client != a.client || last.Status != vsr.StatusPartitionNotOwned || last.Protocol != "0.9" {
		t.Fatalf("last store %+v", last)
	}

	// The rebalance timeout completes a hand-over whose owner never commits.
	b2 := startBroker(t, iggytest.WithRebalanceTimeout(500*time.Millisecond))
	groupFixture(t, b2, 2, 5)
	a2 := loginVSR(t, b2.Addr(), vsr.V011)
	a2.join()
	a2.poll("s", "t", groupConsumer("g"), 1, vsr.AtOffset(0), 5)
	c2 := loginVSR(t, b2.Addr(), vsr.V011)
	c2.join()
	if got := c2.mine(); len(got.Partitions) != 0 {
		t.Fatalf("hand-over completed early: %v", got.Partitions)
	}
	time.Sleep(600 * time.Millisecond)
	if got := c2.mine(); !slices.Equal(got.Partitions, []uint32{1}) {
		t.Fatalf("after the rebalance timeout: %v", got.Partitions)
	}
}

func TestVSRDisconnectAndSameClient(t *testing.T) {
	b := startBroker(t)
	groupFixture(t, b, 3, 1)
	a, c := loginVSR(t, b.Addr(), vsr.V011), loginVSR(t, b.Addr(), vsr.V011)
	a.join()
	c.join()
	sessions := b.Sessions() // a, c and the fixture's
	_ = c.nc.Close()
	eventually(t, "the disconnected member to leave", func() bool { return b.Sessions() == sessions-1 })
	if got := a.mine(); !slices.Equal(got.Partitions, []uint32{0, 1, 2}) {
		t.Fatalf("after disconnect: %v", got.Partitions)
	}

	// The same client id from a second connection takes the session over; the
	// first binding learns it on its next request (SessionTooLow), and its
	// disconnect releases nothing.
	a2 := dialVSR(t, b.Addr(), vsr.V011)
	a2.client = a.client
	if r := a2.login(vsr.V011.Version(), "iggy", "iggy"); r.evict != nil || a2.session == a.session {
		t.Fatalf("second login: %+v, session %d (first %d)", r.evict, a2.session, a.session)
	}
	if got := a2.mine(); !slices.Equal(got.Partitions, []uint32{0, 1, 2}) {
		t.Fatalf("membership after the rebind: %v", got.Partitions)
	}
	if r := a.do(vsr.CodePing, nil); r.evict == nil || r.evict.Reason != vsr.EvictSessionTooLow {
		t.Fatalf("first binding's request: %+v, want eviction 7", r)
	}
	_ = a.nc.Close()
	time.Sleep(50 * time.Millisecond)
	if got := a2.mine(); !slices.Equal(got.Partitions, []uint32{0, 1, 2}) || b.Sessions() != sessions-1 {
		t.Fatalf("after the first connection closed: %v, sessions %d", got.Partitions, b.Sessions())
	}
	// EvictClients ends every session.
	if n := b.EvictClients(vsr.EvictSessionError); n != sessions-1 {
		t.Fatalf("evicted %d", n)
	}
	if r := a2.read(); r.evict == nil || r.evict.Reason != vsr.EvictSessionError {
		t.Fatalf("evicted client read %+v", r)
	}
	if members, _ := b.GroupMembers("s", "t", "g"); len(members) != 0 {
		t.Fatalf("members after eviction: %+v", members)
	}
}

func TestVSRHeartbeat(t *testing.T) {
	const interval = 300 * time.Millisecond // eviction after 360 ms of silence
	b := startBroker(t, iggytest.WithHeartbeat(interval))
	groupFixture(t, b, 2, 1)
	silent, live, idle := loginVSR(t, b.Addr(), vsr.V011), loginVSR(t, b.Addr(), vsr.V012), loginVSR(t, b.Addr(), vsr.V011)
	silent.join()
	live.join()
	evicted := make(chan vsrReply, 1)
	go func() {
		r, _ := silent.readWithin(5 * time.Second)
		evicted <- r
	}()
	start := time.Now()
	var r vsrReply
	for waiting := true; waiting; {
		select {
		case r = <-evicted:
			waiting = false
		case <-time.After(30 * time.Millisecond):
			live.must(vsr.CodePing, nil) // any request counts
		}
	}
	if r.evict == nil || r.evict.Reason != vsr.EvictStaleClient {
		t.Fatalf("silent member: %+v; want eviction 13", r)
	}
	if waited := time.Since(start); waited < interval {
		t.Fatalf("evicted after %v, before the %v interval", waited, interval)
	}
	if _, err := silent.readWithin(2 * time.Second); err != io.EOF {
		t.Fatalf("after the eviction the connection must close: %v", err)
	}
	if got := live.mine(); !slices.Equal(got.Partitions, []uint32{0, 1}) {
		t.Fatalf("live member after the eviction: %v", got.Partitions)
	}
	// A silent client without a membership is not evicted.
	idle.must(vsr.CodePing, nil)
}

func TestVSR012Incarnation(t *testing.T) {
	b := startBroker(t, iggytest.WithProtocol("0.10"))
	c := loginVSR(t, b.Addr(), vsr.V012)
	c.createStream("s")
	c.createTopic("s", "t", 1)
	c.ctx = vsr.PartitionContext{}
	if _, err := c.trySend("s", "t", 0, sendMsg{payload: "x"}); !vsr.IsStatus(err, vsr.StatusHistoryUnavailable) {
		t.Fatalf("send without an incarnation: %v, want 87", err)
	}
	c.send("s", "t", 0, sendMsg{payload: "x"})
	old := c.ctx
	if inc, ok := b.Incarnation("s", "t", 0); !ok || inc != old.Incarnation {
		t.Fatalf("Incarnation %d, context %+v", inc, old)
	}
	poll := vsr.AppendPoll(nil, &vsr.Poll{Consumer: single(1), Stream: streamID("s"), Topic: streamID("t"), Partition: vsr.PartitionID(0), Strategy: vsr.AtOffset(0), Count: 1})
	c.ctx.Incarnation = old.Incarnation + 100
	c.wantStatus("poll with a wrong incarnation", vsr.CodePoll, poll, vsr.StatusHistoryUnavailable)
	c.wantStatus("store with a wrong incarnation", vsr.CodeStoreOffset, offsetBody(vsr.CodeStoreOffset, "s", "t", single(1), 0, 0), vsr.StatusHistoryUnavailable)
	c.ctx = old
	c.ctx.OwnerGeneration = 5
	c.wantStatus("plain consumer with an owner generation", vsr.CodeStoreOffset, offsetBody(vsr.CodeStoreOffset, "s", "t", single(1), 0, 0), vsr.StatusPartitionNotOwned)
	c.ctx.OwnerGeneration = 0
	if err := c.store("s", "t", single(1), 0, 0); err != nil {
		t.Fatal(err)
	}
	// A deleted and re-created topic has partitions of a new incarnation.
	if err := b.DeleteTopic("s", "t"); err != nil {
		t.Fatal(err)
	}
	c.createTopic("s", "t", 1)
	c.useTopic("s", "t", 0)
	if c.ctx.Incarnation == old.Incarnation {
		t.Fatalf("re-created partition kept incarnation %d", old.Incarnation)
	}
	c.ctx = old
	c.wantStatus("poll of the old incarnation", vsr.CodePoll, poll, vsr.StatusHistoryUnavailable)
}

func TestVSR012NotPrimaryAndRoute(t *testing.T) {
	a := startBroker(t, iggytest.WithProtocol("0.10"))
	b := startBroker(t, iggytest.WithProtocol("0.10"), iggytest.WithReplicaID(1))
	nodes := []vsr.Node{{ReplicaID: 0, Name: "a", IP: "127.0.0.1", TCP: port(t, a), Role: vsr.RoleLeader},
		{ReplicaID: 1, Name: "b", IP: "127.0.0.1", TCP: port(t, b), Role: vsr.RoleFollower}}
	for _, br := range []*iggytest.Broker{a, b} {
		br.SetCluster(nodes)
		if err := br.Seed("s", "t", 2, 4); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.SetPrimary("s", "t", 1, 1); err != nil {
		t.Fatal(err)
	}
	ca, cb := loginVSR(t, a.Addr(), vsr.V012), loginVSR(t, b.Addr(), vsr.V012)
	cl, err := vsr.DecodeCluster(ca.must(vsr.CodeClusterMetadata, nil), vsr.V012)
	if err != nil || len(cl.Nodes) != 2 || cl.Nodes[1].ReplicaID != 1 || cl.Nodes[1].TCP != nodes[1].TCP {
		t.Fatalf("cluster %+v, %v", cl, err)
	}
	route := func(c *vsrClient, p uint32) vsr.Route {
		rt, err := vsr.DecodeRoute(c.must(vsr.CodePartitionRoute, vsr.AppendRouteRequest(nil, streamID("s"), streamID("t"), p)))
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	r0, r1 := route(ca, 0), route(ca, 1)
	if r0.PrimaryReplica != 0 || r1.PrimaryReplica != 1 || r1.PartitionsCount != 2 || r1.Incarnation == 0 {
		t.Fatalf("routes %+v %+v", r0, r1)
	}
	ca.wantStatus("route of a missing partition", vsr.CodePartitionRoute, vsr.AppendRouteRequest(nil, streamID("s"), streamID("t"), 7), vsr.StatusPartitionNotFound)
	ca.ctx = vsr.PartitionContext{Incarnation: r1.Incarnation, MetadataOp: r1.MetadataOp}
	poll := vsr.AppendPoll(nil, &vsr.Poll{Consumer: single(1), Stream: streamID("s"), Topic: streamID("t"), Partition: vsr.PartitionID(1), Strategy: vsr.AtOffset(0), Count: 10})
	for code, body := range map[uint32][]byte{
		vsr.CodePoll:         poll,
		vsr.CodeGetOffset:    offsetBody(vsr.CodeGetOffset, "s", "t", single(1), 1, 0),
		vsr.CodeStoreOffset:  offsetBody(vsr.CodeStoreOffset, "s", "t", single(1), 1, 0),
		vsr.CodeDeleteOffset: offsetBody(vsr.CodeDeleteOffset, "s", "t", single(1), 1, 0),
	} {
		ca.wantStatus(vsr.CodeName(code)+" on a backup", code, body, vsr.StatusNotPrimary)
	}
	if _, err := ca.trySend("s", "t", 1, sendMsg{payload: "x"}); !vsr.IsStatus(err, vsr.StatusNotPrimary) {
		t.Fatalf("send on a backup: %v", err)
	}
	// The replica the route names serves it (it shares nothing with a).
	rb := route(cb, 1)
	if rb.PrimaryReplica != 1 {
		t.Fatalf("b's route %+v", rb)
	}
	cb.ctx = vsr.PartitionContext{Incarnation: rb.Incarnation, MetadataOp: rb.MetadataOp}
	out := cb.must(vsr.CodePoll, poll)
	if _, msgs := decodePoll(t, out, vsr.V012); len(msgs) != 2 {
		t.Fatalf("poll on the primary: %d messages", len(msgs))
	}
	// Partition 0 is still a's.
	ca.useTopic("s", "t", 0)
	if _, msgs := ca.poll("s", "t", single(1), 0, vsr.AtOffset(0), 10); len(msgs) != 2 {
		t.Fatalf("a's own partition: %d messages", len(msgs))
	}
}

func port(t testing.TB, b *iggytest.Broker) uint16 {
	_, p, err := net.SplitHostPort(b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	var n uint16
	for _, c := range p {
		n = n*10 + uint16(c-'0')
	}
	return n
}

func TestVSRSkipOffsets(t *testing.T) {
	tg := newTarget(t)
	b := tg.hooks(t)
	if err := b.Seed("s", "t", 1, 3); err != nil {
		t.Fatal(err)
	}
	if err := b.SkipOffsets("s", "t", 0, 5); err != nil {
		t.Fatal(err)
	}
	for _, d := range dialects {
		c := loginVSR(t, b.Addr(), d)
		if base := c.send("s", "t", 0, sendMsg{payload: "after-hole-" + d.Server()}); base != map[vsr.Dialect]uint64{vsr.V011: 8, vsr.V012: 9}[d] {
			t.Fatalf("%s: base offset %d", d.Server(), base)
		}
	}
	want := []uint64{0, 1, 2, 8, 9}
	for _, d := range dialects {
		c := loginVSR(t, b.Addr(), d)
		c.useTopic("s", "t", 0)
		pr, msgs := c.poll("s", "t", single(1), 0, vsr.AtOffset(0), 10)
		if !slices.Equal(offsetsOf(msgs), want) || pr.CurrentOffset != 9 {
			t.Fatalf("%s poll: %v, current %d", d.Server(), offsetsOf(msgs), pr.CurrentOffset)
		}
		if _, msgs = c.poll("s", "t", single(1), 0, vsr.AtOffset(4), 10); !slices.Equal(offsetsOf(msgs), []uint64{8, 9}) {
			t.Fatalf("%s poll inside the hole: %v", d.Server(), offsetsOf(msgs))
		}
	}
	legacy := tg.login(t)
	pm, err := legacy.PollMessages(id(t, "s"), id(t, "t"), iggcon.NewSingleConsumer(id(t, uint32(1))), iggcon.OffsetPollingStrategy(0), 10, false, ptr(uint32(0)))
	if err != nil || !slices.Equal(offsets(pm), want) || pm.CurrentOffset != 9 {
		t.Fatalf("0.8 poll: %v, %v", offsets(pm), err)
	}
}

func TestVSRFaultHooks(t *testing.T) {
	b := startBroker(t)
	groupFixture(t, b, 1, 2)
	c := loginVSR(t, b.Addr(), vsr.V011)
	b.FailCommand(vsr.CodePoll, vsr.StatusGroupMemberNotFound, 1)
	poll := vsr.AppendPoll(nil, &vsr.Poll{Consumer: single(1), Stream: streamID("s"), Topic: streamID("t"), Partition: vsr.PartitionID(0), Strategy: vsr.AtOffset(0), Count: 10})
	c.wantStatus("injected failure", vsr.CodePoll, poll, vsr.StatusGroupMemberNotFound)
	c.must(vsr.CodePoll, poll)

	b.FailCommand(vsr.CodeLogin, vsr.StatusInvalidCredentials, 1) // Register counts as 40
	if r := dialVSR(t, b.Addr(), vsr.V011).login(vsr.V011.Version(), "iggy", "iggy"); r.h.Status != vsr.StatusInvalidCredentials {
		t.Fatalf("injected login failure: %+v", r)
	}

	b.CloseOnCommand(vsr.CodeStoreOffset, 1)
	c.write(c.header(vsr.CodeStoreOffset, offsetBody(vsr.CodeStoreOffset, "s", "t", single(1), 0, 1)), offsetBody(vsr.CodeStoreOffset, "s", "t", single(1), 0, 1))
	if _, err := c.readWithin(2 * time.Second); err != io.EOF {
		t.Fatalf("CloseOnCommand: %v, want the connection closed", err)
	}
	if _, ok := b.GroupOffset("s", "t", "g", 0); ok {
		t.Fatal("a dropped request was executed")
	}

	c = loginVSR(t, b.Addr(), vsr.V011)
	b.CloseAfterCommand(vsr.CodeSend, 1)
	body := vsr.AppendSend(nil, &vsr.Send{Stream: streamID("s"), Topic: streamID("t"), Partitioning: vsr.PartitioningPartition, Key: vsr.ToPartition(0), Count: 1,
		Batch: vsr.SealBatch(vsr.AppendFrame(vsr.BeginBatch(nil, vsr.BatchHeader{}), vsr.U128From(1), 0, 0, []byte("z"), nil))})
	c.write(c.header(vsr.CodeSend, body), body)
	if _, err := c.readWithin(2 * time.Second); err != io.EOF {
		t.Fatalf("CloseAfterCommand: %v", err)
	}
	if off, _ := b.HighOffset("s", "t", 0); off != 2 {
		t.Fatalf("CloseAfterCommand did not execute the send: high offset %d", off)
	}

	b.DelayReplies(150 * time.Millisecond)
	c = loginVSR(t, b.Addr(), vsr.V011)
	start := time.Now()
	c.must(vsr.CodePing, nil)
	if time.Since(start) < 150*time.Millisecond {
		t.Fatal("DelayReplies did not delay")
	}
	b.DelayReplies(0)

	b.CloseAfter(2)
	c = loginVSR(t, b.Addr(), vsr.V011) // request 1
	c.must(vsr.CodePing, nil)           // request 2, then closed
	if _, err := c.readWithin(2 * time.Second); err != io.EOF {
		t.Fatalf("CloseAfter: %v", err)
	}
	b.CloseAfter(0)
	if n := b.DropConnections(); n < 0 {
		t.Fatal(n)
	}
}

func TestVSR012BindSession(t *testing.T) {
	b := startBroker(t)
	groupFixture(t, b, 2, 1)
	first := loginVSR(t, b.Addr(), vsr.V012)
	first.join()
	bind := func(c *vsrClient, session uint64, secret [32]byte) vsrReply {
		body := vsr.AppendBindSession(nil, &vsr.BindSession{Version: vsr.V012.Version(), SDKName: "go-test", SDKVersion: "1",
			Client: c.client, Session: session, BindSecret: secret})
		return c.do(vsr.CodeBindSession, body)
	}
	second := dialVSR(t, b.Addr(), vsr.V012)
	second.client = first.client
	if r := bind(second, first.session, [32]byte{1}); r.evict != nil || r.h.Status != vsr.StatusUnauthenticated {
		t.Fatalf("bind with a wrong secret: %+v, want status 40", r)
	}
	r := bind(second, first.session, first.secret)
	if r.evict != nil || r.h.Status != 0 || r.h.Operation != vsr.OpNonReplicated {
		t.Fatalf("bind: %+v", r)
	}
	lr, err := vsr.DecodeLoginReply(r.body) // no result section
	if err != nil || lr.Session != first.session || lr.ServerVersion != vsr.V012.Version() {
		t.Fatalf("bind reply %+v, %v", lr, err)
	}
	second.session = lr.Session
	if got := second.mine(); !slices.Equal(got.Partitions, []uint32{0, 1}) {
		t.Fatalf("membership through the bound connection: %v", got.Partitions)
	}
	// The first connection is no longer bound.
	if r := first.do(vsr.CodeSyncGroup, groupRef("s", "t", "g")); r.h.Status != vsr.StatusUnauthenticated {
		t.Fatalf("the unbound connection's read: %+v, want status 40", r)
	}
	// Session 0 binds the current session too.
	third := dialVSR(t, b.Addr(), vsr.V012)
	third.client = first.client
	if r := bind(third, 0, first.secret); r.h.Status != 0 {
		t.Fatalf("bind with session 0: %+v", r)
	}
}

func TestVSRObservability(t *testing.T) {
	b := startBroker(t)
	groupFixture(t, b, 1, 3)
	var seen []iggytest.OffsetStore
	b.OnOffsetStore(func(s iggytest.OffsetStore) { seen = append(seen, s) })
	c := loginVSR(t, b.Addr(), vsr.V011)
	c.join()
	if err := c.store("s", "t", groupConsumer("g"), 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.store("s", "t", groupConsumer("g"), 0, 7); !vsr.IsStatus(err, vsr.StatusInvalidOffset) {
		t.Fatalf("store above the current offset: %v", err)
	}
	c.must(vsr.CodePoll, vsr.AppendPoll(nil, &vsr.Poll{Consumer: groupConsumer("g"), Stream: streamID("s"), Topic: streamID("t"),
		Partition: vsr.PartitionID(0), Strategy: vsr.Strategy{Kind: vsr.StrategyNext}, Count: 10, AutoCommit: true}))
	c.must(vsr.CodeDeleteOffset, offsetBody(vsr.CodeDeleteOffset, "s", "t", groupConsumer("g"), 0, 0))
	b.OnOffsetStore(nil)
	want := []iggytest.OffsetStore{
		{Offset: 1}, {Offset: 7, Status: vsr.StatusInvalidOffset}, {Offset: 2, AutoCommit: true}, {Delete: true},
	}
	if len(seen) != len(want) || !slices.Equal(b.OffsetStores(), seen) {
		t.Fatalf("hook saw %+v, record %+v", seen, b.OffsetStores())
	}
	for i, s := range seen {
		w := want[i]
		if s.Offset != w.Offset || s.Status != w.Status || s.AutoCommit != w.AutoCommit || s.Delete != w.Delete ||
			s.Stream != "s" || s.Topic != "t" || s.Group != "g" || s.Client != c.client || s.Protocol != "0.9" {
			t.Fatalf("store %d: %+v, want %+v", i, s, w)
		}
	}
	// A send whose message checksum does not match its bytes is refused.
	batch := vsr.SealBatch(vsr.AppendFrame(vsr.BeginBatch(nil, vsr.BatchHeader{}), vsr.U128From(1), 0, 0, []byte("abc"), nil))
	batch[vsr.BatchHeaderSize+vsr.FrameHeaderSize] ^= 1
	body := vsr.AppendSend(nil, &vsr.Send{Stream: streamID("s"), Topic: streamID("t"), Partitioning: vsr.PartitioningPartition,
		Key: vsr.ToPartition(0), Count: 1, Batch: batch})
	c.wantStatus("corrupt send", vsr.CodeSend, body, vsr.StatusInvalidFormat)
	if off, _ := b.HighOffset("s", "t", 0); off != 2 {
		t.Fatalf("a corrupt send was stored: high offset %d", off)
	}
}

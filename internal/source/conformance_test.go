package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
)

// The conformance suite: what the sink needs of any Iggy server, asked
// through Conn. It runs against each protocol of the in-repo broker, and
// against the real server IGGY_TEST_ADDRESS names (IGGY_TEST_PROTOCOL
// pins the protocol; default auto), so that the broker is held to what
// real servers do.

// target is one server to hold to the suite.
type target struct {
	name     string
	admin    iggyadmin.Admin
	cfg      Config
	protocol string // what Speaks must start with: "Iggy 0.9"
	real     bool
}

func targets(t *testing.T) []target {
	if real := iggyadmin.FromEnv(t); real != nil {
		return []target{{name: "real-" + real.Speaks, admin: real, real: true, protocol: "Iggy " + real.Speaks,
			cfg: Config{Address: real.Addr(), Username: real.Username, Password: real.Password, Protocol: real.SinkProtocol(), ConnectTimeout: 10 * time.Second}}}
	}
	var out []target
	for _, p := range []string{Protocol08, Protocol09, Protocol010} {
		b := startBroker(t, iggytest.WithProtocol(p))
		out = append(out, target{name: "broker-" + p, admin: b, protocol: "Iggy " + p,
			cfg: Config{Address: b.Addr(), Username: "iggy", Password: "iggy", ConnectTimeout: 5 * time.Second}})
	}
	return out
}

// fixture is one fresh stream with a topic of partitions partitions and
// messages messages in each, with user headers on every other one.
type fixture struct {
	stream, topic string
	payloads      [][][]byte
	headers       [][][]byte
}

func (tg target) fixture(t *testing.T, partitions, messages int) *fixture {
	t.Helper()
	f := &fixture{stream: fmt.Sprintf("conf-%d", time.Now().UnixNano()), topic: "events"}
	if _, err := tg.admin.CreateStream(f.stream); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.admin.CreateTopic(f.stream, f.topic, partitions); err != nil {
		t.Fatal(err)
	}
	f.payloads, f.headers = make([][][]byte, partitions), make([][][]byte, partitions)
	for p := range partitions {
		for i := range messages {
			payload := fmt.Appendf(nil, `{"p":%d,"i":%d,"text":"%s"}`, p, i, strings.Repeat("é", i%7))
			var headers []byte
			if i%2 == 0 {
				headers = iggytest.AppendHeader(nil, iggytest.HeaderString, []byte("k"), iggytest.HeaderString, fmt.Appendf(nil, "v%d", i))
			}
			off, err := tg.admin.Append(f.stream, f.topic, uint32(p), payload, headers)
			if err != nil {
				t.Fatal(err)
			}
			if off != uint64(i) {
				t.Fatalf("partition %d: message %d got offset %d", p, i, off)
			}
			f.payloads[p] = append(f.payloads[p], payload)
			f.headers[p] = append(f.headers[p], headers)
		}
	}
	return f
}

func (tg target) open(t *testing.T) *Conn {
	t.Helper()
	c, err := Open(context.Background(), tg.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConformance(t *testing.T) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			t.Run("speaks", func(t *testing.T) {
				if c := tg.open(t); !strings.HasPrefix(c.Speaks(), tg.protocol) {
					t.Fatalf("speaks %q, want %s", c.Speaks(), tg.protocol)
				}
			})
			t.Run("resolve", func(t *testing.T) { conformResolve(t, tg) })
			t.Run("poll and offsets", func(t *testing.T) { conformPoll(t, tg) })
			t.Run("group members share the partitions", func(t *testing.T) { conformGroup(t, tg) })
			t.Run("send", func(t *testing.T) { conformSend(t, tg) })
			t.Run("create-and-read", func(t *testing.T) { conformCreateRead(t, tg) })
		})
	}
}

func conformResolve(t *testing.T, tg target) {
	f := tg.fixture(t, 3, 4)
	c := tg.open(t)
	ctx := context.Background()
	byName, err := c.Topic(ctx, f.stream, f.topic, "g")
	if err != nil {
		t.Fatal(err)
	}
	if byName.Stream != f.stream || byName.Topic != f.topic || len(byName.Partitions) != 3 {
		t.Fatalf("topic %+v", byName)
	}
	for i, p := range byName.Partitions {
		if p.ID != uint32(i) || p.MessagesCount != 4 || p.CurrentOffset != 3 || p.CreatedAt == 0 {
			t.Fatalf("partition %d: %+v", i, p)
		}
		if tg.protocol == "Iggy 0.10" && p.Incarnation == 0 {
			t.Fatalf("partition %d: no incarnation on 0.10", i)
		}
	}
	byID, err := c.Topic(ctx, fmt.Sprint(byName.StreamID), fmt.Sprint(byName.TopicID), "g")
	if err != nil || byID.Stream != f.stream || byID.Topic != f.topic {
		t.Fatalf("by ids: %+v, %v", byID, err)
	}
	for _, tc := range []struct{ stream, topic string }{{"no-such-stream-x", f.topic}, {f.stream, "no-such-topic-x"}} {
		if _, err := c.Topic(ctx, tc.stream, tc.topic, "g"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Topic(%s, %s) = %v, want ErrNotFound", tc.stream, tc.topic, err)
		}
	}
}

func conformPoll(t *testing.T, tg target) {
	f := tg.fixture(t, 2, 25)
	c := tg.open(t)
	ctx := context.Background()
	tp, err := c.Topic(ctx, f.stream, f.topic, "conf-g")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Join(ctx, tp); err != nil {
		t.Fatal(err)
	}
	for p := uint32(0); p < 2; p++ {
		if _, ok, err := c.StoredOffset(ctx, tp, p); err != nil || ok {
			t.Fatalf("partition %d: a stored offset before any store (ok=%v, %v)", p, ok, err)
		}
		var got []batch.Message
		for next := uint64(0); next < 25; {
			msgs, owned, err := c.Poll(ctx, tp, p, next, 10, nil)
			if err != nil || !owned || len(msgs) == 0 || len(msgs) > 10 {
				t.Fatalf("partition %d at %d: %d messages, owned=%v, %v", p, next, len(msgs), owned, err)
			}
			got = append(got, msgs...)
			next = msgs[len(msgs)-1].Offset + 1
		}
		for i, m := range got {
			if m.Offset != uint64(i) || !bytes.Equal(m.Payload, f.payloads[p][i]) || !bytes.Equal(m.Headers, f.headers[p][i]) {
				t.Fatalf("partition %d message %d: offset %d payload %q headers %x; want %q %x", p, i, m.Offset, m.Payload, m.Headers, f.payloads[p][i], f.headers[p][i])
			}
			if m.Timestamp == 0 || i > 0 && m.Timestamp < got[i-1].Timestamp {
				t.Fatalf("partition %d message %d: server time %d after %d", p, i, m.Timestamp, got[max(i-1, 0)].Timestamp)
			}
		}
		if msgs, owned, err := c.Poll(ctx, tp, p, 25, 10, nil); err != nil || !owned || len(msgs) != 0 {
			t.Fatalf("partition %d past its end: %d messages, owned=%v, %v", p, len(msgs), owned, err)
		}
		if err := c.StoreOffset(ctx, tp, p, 19); err != nil {
			t.Fatal(err)
		}
		if off, ok, err := c.StoredOffset(ctx, tp, p); err != nil || !ok || off != 19 {
			t.Fatalf("partition %d: stored %d (ok=%v, %v), want 19", p, off, ok, err)
		}
		if off, ok := tg.admin.GroupOffset(f.stream, f.topic, "conf-g", p); !ok || off != 19 {
			t.Fatalf("partition %d: the server holds %d (ok=%v), want 19", p, off, ok)
		}
		if err := c.StoreOffset(ctx, tp, p, 25); err == nil || errors.Is(err, ErrNotOwner) {
			t.Fatalf("partition %d: storing an offset past the end: %v, want a refusal that is not ErrNotOwner", p, err)
		}
	}
	if err := c.Leave(ctx, tp); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(ctx, tp); err != nil {
		t.Fatalf("leaving twice: %v", err)
	}
}

// conformSend: messages sent to a partition land after its messages, in
// order, with their payloads, headers, ids and origin times, in any order
// (a replay finds what it produced by them); a message without an id gets
// one.
func conformSend(t *testing.T, tg target) {
	f := tg.fixture(t, 2, 3)
	c := tg.open(t)
	ctx := context.Background()
	tp, err := c.Topic(ctx, f.stream, f.topic, "send-g")
	if err != nil {
		t.Fatal(err)
	}
	origin := uint64(time.Date(2026, 3, 16, 14, 2, 31, 0, time.UTC).UnixMicro())
	var out []Outgoing
	for i := range 4 {
		m := Outgoing{Payload: fmt.Appendf(nil, `{"sent":%d}`, i), OriginTimestamp: origin + uint64(i)*1500}
		if i < 3 {
			m.ID = [16]byte{0: byte(i + 1), 15: 0x7f}
		} else {
			m.OriginTimestamp = origin - 700 // another producer's, earlier: origin times need not increase
		}
		if i%2 == 0 {
			m.Headers = iggytest.AppendHeader(nil, iggytest.HeaderString, []byte("k"), iggytest.HeaderString, fmt.Appendf(nil, "s%d", i))
		}
		out = append(out, m)
	}
	first, known, err := c.Send(ctx, tp, 1, out)
	if err != nil {
		t.Fatal(err)
	}
	if wantKnown := tg.protocol != "Iggy 0.8"; known != wantKnown || known && first != 3 {
		t.Fatalf("send: first offset %d (known %v), want 3 (known %v)", first, known, wantKnown)
	}
	if err := c.Join(ctx, tp); err != nil {
		t.Fatal(err)
	}
	got, owned, err := c.Poll(ctx, tp, 1, 3, 10, nil)
	if err != nil || !owned || len(got) != len(out) {
		t.Fatalf("poll after the send: %d messages, owned=%v, %v", len(got), owned, err)
	}
	for i, m := range got {
		w := out[i]
		if m.Offset != uint64(3+i) || !bytes.Equal(m.Payload, w.Payload) || !bytes.Equal(m.Headers, w.Headers) || m.OriginTimestamp != w.OriginTimestamp {
			t.Fatalf("message %d: offset %d payload %q headers %x origin %d; want %d %q %x %d", i, m.Offset, m.Payload, m.Headers, m.OriginTimestamp, 3+i, w.Payload, w.Headers, w.OriginTimestamp)
		}
		if w.ID != ([16]byte{}) && m.ID != w.ID || w.ID == ([16]byte{}) && m.ID == ([16]byte{}) {
			t.Fatalf("message %d: id %x, sent %x", i, m.ID, w.ID)
		}
	}
	if _, _, err := c.Send(ctx, tp, 1, nil); err == nil {
		t.Fatal("a send of no messages was accepted")
	}
}

// conformCreateRead: a replay's target side. CreateTopic makes the stream
// and the topic (a second time: ErrExists), and Read reads any partition
// as a plain consumer, leaving no group and no offset behind.
func conformCreateRead(t *testing.T, tg target) {
	c := tg.open(t)
	ctx := context.Background()
	stream := fmt.Sprintf("conf-create-%d", time.Now().UnixNano())
	if err := c.CreateTopic(ctx, stream, "restored", 3); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic(ctx, stream, "restored", 3); !errors.Is(err, ErrExists) {
		t.Fatalf("a second CreateTopic: %v, want ErrExists", err)
	}
	tp, err := c.Topic(ctx, stream, "restored", "never-joined")
	if err != nil || len(tp.Partitions) != 3 {
		t.Fatalf("the created topic: %+v, %v", tp, err)
	}
	if got, err := c.Read(ctx, tp, 2, 0, 10); err != nil || len(got) != 0 {
		t.Fatalf("read of an empty partition: %d messages, %v", len(got), err)
	}
	var out []Outgoing
	for i := range 5 {
		out = append(out, Outgoing{ID: [16]byte{0: byte(i + 1), 9: 0x42}, Payload: fmt.Appendf(nil, "m%d", i)})
	}
	if _, _, err := c.Send(ctx, tp, 2, out); err != nil {
		t.Fatal(err)
	}
	got, err := c.Read(ctx, tp, 2, 1, 3)
	if err != nil || len(got) != 3 {
		t.Fatalf("read 3 from offset 1: %d messages, %v", len(got), err)
	}
	for i, m := range got {
		if m.Offset != uint64(1+i) || m.ID != out[1+i].ID || string(m.Payload) != fmt.Sprintf("m%d", 1+i) {
			t.Fatalf("message %d: offset %d id %x payload %q", i, m.Offset, m.ID, m.Payload)
		}
	}
	if got, err := c.Read(ctx, tp, 2, 5, 10); err != nil || len(got) != 0 {
		t.Fatalf("read past the end: %d messages, %v", len(got), err)
	}
	if err := c.Refresh(ctx, tp); err != nil || tp.Partitions[2].MessagesCount != 5 || tp.Partitions[2].CurrentOffset != 4 {
		t.Fatalf("after the send: %+v, %v", tp.Partitions, err)
	}
}

// owned lists the partitions a member can poll now.
func owned(t *testing.T, c *Conn, tp *Topic) []uint32 {
	t.Helper()
	var out []uint32
	for _, p := range tp.Partitions {
		_, ok, err := c.Poll(context.Background(), tp, p.ID, 0, 1, nil)
		switch {
		case errors.Is(err, ErrNotOwner):
		case err != nil:
			t.Fatalf("poll partition %d: %v", p.ID, err)
		case ok:
			out = append(out, p.ID)
		}
	}
	return out
}

func conformGroup(t *testing.T, tg target) {
	f := tg.fixture(t, 4, 2)
	ctx := context.Background()
	member := func() (*Conn, *Topic) {
		c := tg.open(t)
		tp, err := c.Topic(ctx, f.stream, f.topic, "conf-share")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Join(ctx, tp); err != nil {
			t.Fatal(err)
		}
		return c, tp
	}
	a, ta := member()
	b, tb := member()
	observer := tg.open(t)
	to, err := observer.Topic(ctx, f.stream, f.topic, "conf-share")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var oa, ob []uint32
	for {
		oa, ob = owned(t, a, ta), owned(t, b, tb)
		// Disjoint, complete, both at work. How many each holds is the
		// server's choice (0.8 hands one partition to a new member, 0.9
		// evens the split).
		all := slices.Sorted(slices.Values(append(slices.Clone(oa), ob...)))
		if slices.Equal(all, []uint32{0, 1, 2, 3}) && len(oa) > 0 && len(ob) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("two members own %v and %v, want each some of partitions 0..3, each partition once", oa, ob)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ms, err := observer.GroupMembers(ctx, to)
	if err != nil || len(ms) != 2 {
		t.Fatalf("members %+v, %v", ms, err)
	}
	if err := b.Leave(ctx, tb); err != nil {
		t.Fatal(err)
	}
	for {
		if oa = owned(t, a, ta); len(oa) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the other member left, the first owns %v, want all four", oa)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ms, err := observer.GroupMembers(ctx, to); err != nil || len(ms) != 1 || len(ms[0].Partitions) != 4 {
		t.Fatalf("members after a leave %+v, %v", ms, err)
	}
}

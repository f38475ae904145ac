package source

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// TestAutoFindsEachProtocol: iggy.protocol = auto against a broker that
// speaks only one of the three; Speaks says which, and the connection works.
func TestAutoFindsEachProtocol(t *testing.T) {
	for _, tc := range []struct{ broker, speaks string }{
		{"0.8", "Iggy 0.8 (legacy protocol)"},
		{"0.9", "Iggy 0.9 (protocol 0.11.0)"},
		{"0.10", "Iggy 0.10 (protocol 0.12.0)"},
	} {
		t.Run(tc.broker, func(t *testing.T) {
			b := startBroker(t, iggytest.WithProtocol(tc.broker))
			if err := b.Seed("app", "logs", 2, 10); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, p := range []string{"", ProtocolAuto, tc.broker} {
				c, err := Open(ctx, Config{Address: b.Addr(), Username: "iggy", Password: "iggy", Protocol: p, ConnectTimeout: 2 * time.Second})
				if err != nil {
					t.Fatalf("protocol %q: %v", p, err)
				}
				if c.Speaks() != tc.speaks {
					t.Fatalf("protocol %q: speaks %q, want %q", p, c.Speaks(), tc.speaks)
				}
				tp, err := c.Topic(ctx, "app", "logs", "g")
				if err != nil || len(tp.Partitions) != 2 || tp.Partitions[1].MessagesCount != 5 {
					t.Fatalf("protocol %q: topic %+v, %v", p, tp, err)
				}
				c.Close()
			}
		})
	}
}

// TestPinnedProtocolTheServerDoesNotSpeak: a pinned protocol fails within
// the connect timeout, with an error naming what was configured and what
// the server speaks; never a hang until a request deadline.
func TestPinnedProtocolTheServerDoesNotSpeak(t *testing.T) {
	const timeout = 2 * time.Second
	for _, tc := range []struct{ pin, broker string }{
		{"0.8", "0.9"}, {"0.8", "0.10"}, {"0.9", "0.8"}, {"0.10", "0.8"}, {"0.9", "0.10"}, {"0.10", "0.9"},
	} {
		t.Run(tc.pin+" on "+tc.broker, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, iggytest.WithProtocol(tc.broker))
			start := time.Now()
			_, err := Open(context.Background(), Config{Address: b.Addr(), Username: "iggy", Password: "iggy-pw-not-in-errors", Protocol: tc.pin, ConnectTimeout: timeout, RequestTimeout: time.Minute})
			took := time.Since(start)
			if !errors.Is(err, ErrProtocolMismatch) {
				t.Fatalf("error %v, want ErrProtocolMismatch", err)
			}
			server := "Iggy " + tc.broker
			if tc.pin == "0.8" {
				server = "Iggy 0.9 or 0.10" // what the 0.8 client can tell: the broker answered the VSR protocol
				if tc.broker == "0.9" {
					server = "Iggy 0.9"
				}
			}
			for _, want := range []string{"iggy.protocol (IGGY_PROTOCOL) is " + tc.pin, b.Addr(), server} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "iggy-pw-not-in-errors") {
				t.Fatalf("the error shows the password: %v", err)
			}
			if took > timeout+500*time.Millisecond {
				t.Fatalf("took %s with a %s connect timeout", took, timeout)
			}
		})
	}
}

// TestIncompatibleEvictionNamesTheAcceptedRange: the broker pinned to 0.10
// evicts a 0.11.0 login and says which protocol it accepts.
func TestIncompatibleEvictionNamesTheAcceptedRange(t *testing.T) {
	b := startBroker(t, iggytest.WithProtocol("0.10"))
	_, err := Open(context.Background(), Config{Address: b.Addr(), Username: "iggy", Password: "iggy", Protocol: Protocol09})
	if !errors.Is(err, ErrProtocolMismatch) || !strings.Contains(err.Error(), "accepts 0.12.0") {
		t.Fatalf("0.9 login to a 0.10 server: %v, want the accepted protocol named", err)
	}
}

// TestOwnershipMovesMidRun: a second member joins; the first member's
// polls of the partition it lost answer the re-sync sentinel (ErrNotOwner),
// it is told its remaining partitions by Sync, and an offset store for a
// partition no longer its own is refused (5009) and never lands.
func TestOwnershipMovesMidRun(t *testing.T) {
	for _, proto := range []string{"0.9", "0.10"} {
		t.Run(proto, func(t *testing.T) {
			b := startBroker(t, iggytest.WithProtocol(proto), iggytest.WithRebalanceTimeout(50*time.Millisecond))
			if err := b.Seed("app", "logs", 2, 20); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			open := func() (*Conn, *Topic) {
				return openTopic(t, Config{Address: b.Addr(), Username: "iggy", Password: "iggy"}, true)
			}
			first, t1 := open()
			for p := uint32(0); p < 2; p++ {
				msgs, owned, err := first.Poll(ctx, t1, p, 0, 3, nil)
				if err != nil || !owned || len(msgs) != 3 {
					t.Fatalf("alone, partition %d: %d messages, owned=%v, %v", p, len(msgs), owned, err)
				}
			}
			second, t2 := open()
			time.Sleep(100 * time.Millisecond) // past the rebalance timeout: the hand-over completes
			moved, kept := uint32(99), uint32(99)
			for p := uint32(0); p < 2; p++ {
				_, owned, err := first.Poll(ctx, t1, p, 3, 3, nil)
				switch {
				case errors.Is(err, ErrNotOwner), err == nil && !owned:
					moved = p
				case err == nil && owned:
					kept = p
				default:
					t.Fatalf("partition %d after the join: %v", p, err)
				}
			}
			if moved == 99 || kept == 99 {
				t.Fatalf("after the second member joined the first still polls both partitions (kept %d, moved %d)", kept, moved)
			}
			if err := first.StoreOffset(ctx, t1, moved, 2); !errors.Is(err, ErrNotOwner) {
				t.Fatalf("storing an offset of the lost partition %d: %v, want ErrNotOwner", moved, err)
			}
			if err := first.StoreOffset(ctx, t1, kept, 2); err != nil {
				t.Fatalf("storing an offset of the kept partition %d: %v", kept, err)
			}
			if msgs, owned, err := second.Poll(ctx, t2, moved, 0, 3, nil); err != nil || !owned || len(msgs) != 3 {
				t.Fatalf("the new owner polls partition %d: %d messages, owned=%v, %v", moved, len(msgs), owned, err)
			}
			if off, ok := b.GroupOffset("app", "logs", "g", moved); ok {
				t.Fatalf("an offset (%d) was stored for partition %d by the member that lost it", off, moved)
			}
			refused := 0
			for _, s := range b.OffsetStores() {
				if s.Partition == moved && s.Status != 0 {
					refused++
					if s.Status != vsr.StatusPartitionNotOwned {
						t.Fatalf("refused with status %d, want 5009", s.Status)
					}
				}
			}
			if refused != 1 {
				t.Fatalf("%d refused stores for partition %d, want 1", refused, moved)
			}
		})
	}
}

// TestKeepaliveKeepsASilentMember: the server evicts a group member that
// sends nothing for 1.2 heartbeat intervals; the client's pings keep a
// member alive through a long silence (a long object being uploaded), and
// without them it is evicted.
func TestKeepaliveKeepsASilentMember(t *testing.T) {
	b := startBroker(t, iggytest.WithProtocol("0.9"), iggytest.WithHeartbeat(300*time.Millisecond))
	if err := b.Seed("app", "logs", 1, 5); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	member := func(keepalive time.Duration) (*Conn, *Topic) {
		c, err := Open(ctx, Config{Address: b.Addr(), Username: "iggy", Password: "iggy", Keepalive: keepalive})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		tp, err := c.Topic(ctx, "app", "logs", "g-"+keepalive.String())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Join(ctx, tp); err != nil {
			t.Fatal(err)
		}
		return c, tp
	}
	kept, tk := member(100 * time.Millisecond)
	silent, ts := member(-1)
	time.Sleep(1200 * time.Millisecond) // four heartbeat intervals without a call
	if msgs, owned, err := kept.Poll(ctx, tk, 0, 0, 5, nil); err != nil || !owned || len(msgs) != 5 {
		t.Fatalf("member with keepalive after the silence: %d messages, owned=%v, %v", len(msgs), owned, err)
	}
	_, _, err := silent.Poll(ctx, ts, 0, 0, 5, nil)
	if !errors.Is(err, ErrEvicted) || !strings.Contains(err.Error(), "stale client") {
		t.Fatalf("member without keepalive after the silence: %v, want an eviction for missed heartbeats", err)
	}
}

// TestPollIntoReusesTheBuffer: on 0.9 and 0.10 consecutive polls read into
// the buffer the caller lends (no reply-sized allocation each), and each
// poll's messages are the right ones; 0.8's client allocates its own and
// leaves the buffer alone.
func TestPollIntoReusesTheBuffer(t *testing.T) {
	for _, proto := range []string{"0.8", "0.9", "0.10"} {
		t.Run(proto, func(t *testing.T) {
			b := startBroker(t, iggytest.WithProtocol(proto))
			if err := b.Seed("app", "logs", 1, 40); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c, tp := openTopic(t, Config{Address: b.Addr(), Username: "iggy", Password: "iggy", ConnectTimeout: 2 * time.Second}, true)
			var buf []byte
			var firstBacking *byte
			for round, offset := range []uint64{0, 10, 20} {
				msgs, owned, err := c.PollInto(ctx, tp, 0, offset, 10, nil, &buf)
				if err != nil || !owned || len(msgs) != 10 {
					t.Fatalf("poll at %d: %d messages, owned %v, %v", offset, len(msgs), owned, err)
				}
				for i, m := range msgs {
					want, _, err := c.Poll(ctx, tp, 0, offset+uint64(i), 1, nil)
					if err != nil || len(want) != 1 || m.Offset != offset+uint64(i) || string(m.Payload) != string(want[0].Payload) {
						t.Fatalf("poll at %d, message %d: offset %d %q; a poll of it alone: %v %v", offset, i, m.Offset, m.Payload, want, err)
					}
				}
				if proto == "0.8" {
					if buf != nil {
						t.Fatal("the 0.8 client touched the lent buffer")
					}
					continue
				}
				if len(buf) != 0 || cap(buf) == 0 {
					t.Fatalf("poll at %d: lent buffer len %d cap %d, want it grown and empty", offset, len(buf), cap(buf))
				}
				whole := buf[:cap(buf)]
				lo, p := uintptr(unsafe.Pointer(&whole[0])), uintptr(unsafe.Pointer(&msgs[0].Payload[0]))
				if p < lo || p >= lo+uintptr(len(whole)) {
					t.Fatalf("poll at %d: the messages do not live in the lent buffer", offset)
				}
				if round == 0 {
					firstBacking = &whole[0]
				} else if &whole[0] != firstBacking {
					t.Fatalf("poll at %d allocated a new buffer for a reply of the same size", offset)
				}
			}
		})
	}
}

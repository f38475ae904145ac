package iggytest_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
)

const testToken = "iggytest-personal-access-token-0123456789ab"

func TestMain(m *testing.M) {
	// The SDK logs every login's cluster-metadata check with the standard logger.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// target is the server under test: the in-process broker, or a real Iggy 0.8 server
// when IGGY_TEST_ADDRESS is set.
type target struct {
	addr, user, pass string
	broker           *iggytest.Broker // nil for a real server
}

func newTarget(t testing.TB, opts ...iggytest.Option) *target {
	t.Helper()
	if addr := os.Getenv("IGGY_TEST_ADDRESS"); addr != "" {
		return &target{addr: addr, user: envOr("IGGY_TEST_USERNAME", "iggy"), pass: envOr("IGGY_TEST_PASSWORD", "iggy")}
	}
	b, err := iggytest.Start(append([]iggytest.Option{iggytest.WithToken(testToken)}, opts...)...)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return &target{addr: b.Addr(), user: "iggy", pass: "iggy", broker: b}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// hooks returns the in-process broker or skips a test that needs its fault hooks.
func (tg *target) hooks(t testing.TB) *iggytest.Broker {
	t.Helper()
	if tg.broker == nil {
		t.Skip("needs the in-process broker's hooks; IGGY_TEST_ADDRESS points at a real server")
	}
	return tg.broker
}

// dial connects an SDK client, dialling first because NewIggyClient retries forever
// on an unreachable address.
func (tg *target) dial(t testing.TB, extra ...tcp.Option) iggcon.Client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", tg.addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", tg.addr, err)
	}
	_ = nc.Close()
	type result struct {
		c   iggcon.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := client.NewIggyClient(client.WithTcp(append([]tcp.Option{tcp.WithServerAddress(tg.addr)}, extra...)...))
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("new client: %v", r.err)
		}
		t.Cleanup(func() { _ = r.c.Close() })
		return r.c
	case <-time.After(5 * time.Second):
		t.Fatalf("NewIggyClient(%s) did not return", tg.addr)
		return nil
	}
}

// login connects and logs in as the configured user.
func (tg *target) login(t testing.TB) iggcon.Client {
	t.Helper()
	c := tg.dial(t)
	if _, err := c.LoginUser(tg.user, tg.pass); err != nil {
		t.Fatalf("login %s: %v", tg.user, err)
	}
	return c
}

var nameSeq atomic.Int64

// unique makes names that do not collide on a long-lived real server.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, nameSeq.Add(1))
}

func id[T uint32 | string](t testing.TB, v T) iggcon.Identifier {
	t.Helper()
	i, err := iggcon.NewIdentifier(v)
	if err != nil {
		t.Fatalf("identifier %v: %v", v, err)
	}
	return i
}

// topicFixture creates a fresh stream and topic with n partitions.
type topicFixture struct {
	stream, topic       string
	streamID, topicID   iggcon.Identifier
	streamNum, topicNum uint32
}

func newTopic(t testing.TB, c iggcon.Client, partitions uint32) topicFixture {
	t.Helper()
	f := topicFixture{stream: unique("s"), topic: unique("t")}
	sd, err := c.CreateStream(f.stream)
	if err != nil {
		t.Fatalf("create stream %s: %v", f.stream, err)
	}
	f.streamID = id(t, f.stream)
	td, err := c.CreateTopic(f.streamID, f.topic, partitions, iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
	if err != nil {
		t.Fatalf("create topic %s: %v", f.topic, err)
	}
	f.topicID = id(t, f.topic)
	f.streamNum, f.topicNum = sd.Id, td.Id
	return f
}

func msg(t testing.TB, payload string, opts ...iggcon.IggyMessageOpt) iggcon.IggyMessage {
	t.Helper()
	m, err := iggcon.NewIggyMessage([]byte(payload), opts...)
	if err != nil {
		t.Fatalf("new message: %v", err)
	}
	return m
}

func send(t testing.TB, c iggcon.Client, f topicFixture, p iggcon.Partitioning, payloads ...string) {
	t.Helper()
	msgs := make([]iggcon.IggyMessage, len(payloads))
	for i, pl := range payloads {
		msgs[i] = msg(t, pl)
	}
	if err := c.SendMessages(f.streamID, f.topicID, p, msgs); err != nil {
		t.Fatalf("send %d messages: %v", len(msgs), err)
	}
}

func payloads(pm *iggcon.PolledMessage) []string {
	out := make([]string, len(pm.Messages))
	for i, m := range pm.Messages {
		out[i] = string(m.Payload)
	}
	return out
}

func offsets(pm *iggcon.PolledMessage) []uint64 {
	out := make([]uint64, len(pm.Messages))
	for i, m := range pm.Messages {
		out[i] = m.Header.Offset
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// wantErr checks err is the SDK sentinel want (by errors.Is) and carries code.
func wantErr(t testing.TB, what string, err error, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want %v", what, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
	var ie ierror.IggyError
	var we ierror.IggyError
	if errors.As(err, &ie) && errors.As(want, &we) && ie.Code() != we.Code() {
		t.Fatalf("%s: got code %d, want %d", what, ie.Code(), we.Code())
	}
}

func group(t testing.TB, c iggcon.Client, f topicFixture, g string) *iggcon.ConsumerGroupDetails {
	t.Helper()
	d, err := c.GetConsumerGroup(f.streamID, f.topicID, id(t, g))
	if err != nil {
		t.Fatalf("get group %s: %v", g, err)
	}
	return d
}

// checkExclusive asserts every partition 0..n-1 is owned by exactly one member and
// returns the number each member owns, by member id.
func checkExclusive(t testing.TB, d *iggcon.ConsumerGroupDetails, n int) map[uint32]int {
	t.Helper()
	seen := map[uint32]uint32{}
	counts := map[uint32]int{}
	for _, m := range d.Members {
		if int(m.PartitionsCount) != len(m.Partitions) {
			t.Fatalf("member %d says %d partitions, lists %v", m.ID, m.PartitionsCount, m.Partitions)
		}
		counts[m.ID] = len(m.Partitions)
		for _, p := range m.Partitions {
			if prev, dup := seen[p]; dup {
				t.Fatalf("partition %d owned by members %d and %d", p, prev, m.ID)
			}
			seen[p] = m.ID
		}
	}
	for p := 0; p < n; p++ {
		if _, ok := seen[uint32(p)]; !ok {
			t.Fatalf("partition %d owned by no member: %+v", p, d.Members)
		}
	}
	return counts
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

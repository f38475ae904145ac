package fanout_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
)

// server is an Iggy server with one fresh topic: the in-repo broker, or
// the real server named by IGGY_TEST_ADDRESS (iggy/iggy unless
// IGGY_TEST_USERNAME / IGGY_TEST_PASSWORD say otherwise).
type server struct {
	cfg           source.Config
	stream, topic string
	// send appends one message to a partition.
	send func(t *testing.T, partition uint32)
	// broker is the in-repo broker (nil against a real server).
	broker *iggytest.Broker
}

func newServer(t *testing.T, partitions int) *server {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	s := &server{stream: "cohort-" + hex.EncodeToString(b), topic: "events"}
	if real := iggyadmin.FromEnv(t); real != nil {
		s.cfg = source.Config{Address: real.Addr(), Username: real.Username, Password: real.Password, Protocol: real.SinkProtocol(), ConnectTimeout: 2 * time.Second}
		if _, err := real.CreateStream(s.stream); err != nil {
			t.Fatal(err)
		}
		if _, err := real.CreateTopic(s.stream, s.topic, partitions); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = real.DeleteTopic(s.stream, s.topic) })
		s.send = func(t *testing.T, p uint32) {
			if _, err := real.Append(s.stream, s.topic, p, []byte(`{"n":1}`), nil); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	broker, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)), iggytest.WithProtocol(iggyadmin.BrokerProtocol(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { broker.Close() })
	if _, err := broker.CreateStream(s.stream); err != nil {
		t.Fatal(err)
	}
	if _, err := broker.CreateTopic(s.stream, s.topic, partitions); err != nil {
		t.Fatal(err)
	}
	s.cfg = source.Config{Address: broker.Addr(), Username: "iggy", Password: "iggy", ConnectTimeout: 2 * time.Second}
	s.broker = broker
	s.send = func(t *testing.T, p uint32) {
		if _, err := broker.Append(s.stream, s.topic, p, []byte(`{"n":1}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *server) open(t *testing.T) *source.Conn {
	t.Helper()
	c, err := source.Open(context.Background(), s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *server) streams() []drain.Stream {
	return []drain.Stream{{Name: s.stream, Topics: []string{s.topic}, Group: "sink", BatchLength: 100}}
}

// members lists the group as an observer that is not a member.
func (s *server) members(t *testing.T) []source.Member {
	t.Helper()
	c := s.open(t)
	defer c.Close()
	topic, err := c.Topic(context.Background(), s.stream, s.topic, "sink")
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.GroupMembers(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// join makes conn a cohort member the way a worker's drain run does:
// Topic, then the settling Join.
func (s *server) join(t *testing.T, conn *source.Conn, cohort *fanout.Cohort) (*fanout.Settler, error) {
	st := &fanout.Settler{Cohort: cohort, Log: slog.New(slog.DiscardHandler)}
	c := st.Wrap(conn)
	topic, err := c.Topic(context.Background(), s.stream, s.topic, "sink")
	if err != nil {
		return st, err
	}
	return st, c.Join(context.Background(), topic)
}

// TestCohortSettlesEvenly gathers three members behind an anchor, joining
// at staggered moments as invocations do, and checks that once they return
// from Join the group is theirs and split evenly: every partition owned by
// exactly one member, 6/5/5 of 16. It logs how long settling took.
func TestCohortSettlesEvenly(t *testing.T) {
	const partitions, workers = 16, 3
	srv := newServer(t, partitions)
	began := time.Now()
	anchor, err := fanout.Hold(context.Background(), srv.open(t), srv.streams())
	if err != nil {
		t.Fatal(err)
	}
	cohort := &fanout.Cohort{ID: "test", Workers: workers, Anchors: anchor.Anchors(),
		NotAfter: began.Add(5 * time.Second), SettleBy: began.Add(7 * time.Second)}
	var wg sync.WaitGroup
	released := make(chan int, 1)
	wg.Go(func() {
		n, err := anchor.Release(context.Background(), workers, began.Add(5*time.Second))
		if err != nil {
			t.Error(err)
		}
		released <- n
	})
	settlers := make([]*fanout.Settler, workers)
	joined := make([]time.Duration, workers)
	for i := range workers {
		conn := srv.open(t)
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 150 * time.Millisecond) // invocations start apart
			st, err := srv.join(t, conn, cohort)
			if err != nil {
				t.Error(err)
			}
			settlers[i], joined[i] = st, time.Since(began)
		})
	}
	wg.Wait()
	if n := <-released; n != workers {
		t.Fatalf("the anchor left with %d members gathered, want %d", n, workers)
	}
	members := srv.members(t)
	if len(members) != workers {
		t.Fatalf("group has %d members after settling, want %d: %+v", len(members), workers, members)
	}
	var counts []int
	var owned []uint32
	for _, m := range members {
		counts = append(counts, len(m.Partitions))
		owned = append(owned, m.Partitions...)
	}
	slices.Sort(owned)
	slices.Sort(counts)
	if !slices.Equal(counts, []int{5, 5, 6}) {
		t.Errorf("partitions per member %v, want 5, 5 and 6", counts)
	}
	if len(owned) != partitions || len(slices.Compact(slices.Clone(owned))) != partitions {
		t.Errorf("owned partitions %v: want each of the %d exactly once", owned, partitions)
	}
	for i, st := range settlers {
		res := st.Results()
		if len(res) != 1 || res[0].Late || res[0].TimedOut {
			t.Errorf("member %d settled as %+v", i, res)
		}
	}
	t.Logf("settled in %v after the anchor joined (members returned from Join at %v; last one joined %v after the first)",
		slices.Max(joined), joined, time.Duration(workers-1)*150*time.Millisecond)

	// A member that comes after the cohort settled does not join: joining
	// would take a partition from a member already draining, and its leave
	// would deal every partition again.
	late, err := srv.join(t, srv.open(t), cohort)
	if err != nil {
		t.Fatal(err)
	}
	if res := late.Results(); len(res) != 1 || !res[0].Late {
		t.Fatalf("late member settled as %+v, want Late", res)
	}
	if n := len(srv.members(t)); n != workers {
		t.Fatalf("the late member changed the group: %d members", n)
	}
}

// TestCohortSettleByBoundsTheWait: an anchor that never leaves (its
// coordinator died) holds the members only until SettleBy.
func TestCohortSettleByBoundsTheWait(t *testing.T) {
	srv := newServer(t, 4)
	anchor, err := fanout.Hold(context.Background(), srv.open(t), srv.streams())
	if err != nil {
		t.Fatal(err)
	}
	_ = anchor // never released
	start := time.Now()
	cohort := &fanout.Cohort{ID: "test", Workers: 2, Anchors: anchor.Anchors(), NotAfter: start.Add(time.Second), SettleBy: start.Add(400 * time.Millisecond)}
	st, err := srv.join(t, srv.open(t), cohort)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if res := st.Results(); len(res) != 1 || !res[0].TimedOut || res[0].Members != 2 {
		t.Fatalf("settled as %+v, want TimedOut with the anchor and this member", res)
	}
	if took < 350*time.Millisecond || took > 5*time.Second {
		t.Fatalf("Join returned after %v, want about SettleBy (400ms)", took)
	}
}

// TestSettleByDuringACallKeepsTheConnection: SettleBy passing while the
// member is still talking to a slow server ends the wait, not the call: the
// member settles timed out with the group it read, and its connection
// still works (a call cut at SettleBy cut the connection, and the member
// went on to drain with no connection and no members).
func TestSettleByDuringACallKeepsTheConnection(t *testing.T) {
	srv := newServer(t, 4)
	if srv.broker == nil {
		t.Skip("needs the in-repo broker's reply delay; IGGY_TEST_ADDRESS points at a real server")
	}
	anchor, err := fanout.Hold(context.Background(), srv.open(t), srv.streams())
	if err != nil {
		t.Fatal(err)
	}
	_ = anchor // never released
	conn := srv.open(t)
	srv.broker.DelayReplies(200 * time.Millisecond) // three calls to join: SettleBy passes before the wait begins
	start := time.Now()
	cohort := &fanout.Cohort{ID: "test", Workers: 2, Anchors: anchor.Anchors(), NotAfter: start.Add(time.Second), SettleBy: start.Add(300 * time.Millisecond)}
	st, err := srv.join(t, conn, cohort)
	if err != nil {
		t.Fatal(err)
	}
	srv.broker.DelayReplies(0)
	if res := st.Results(); len(res) != 1 || !res[0].TimedOut || res[0].Members != 2 {
		t.Fatalf("settled as %+v, want TimedOut with the anchor and this member", res)
	}
	topic, err := conn.Topic(context.Background(), srv.stream, srv.topic, "sink")
	if err != nil {
		t.Fatalf("the member's connection after settling: %v", err)
	}
	if _, err := conn.GroupMembers(context.Background(), topic); err != nil {
		t.Fatalf("the member's connection after settling: %v", err)
	}
}

// TestHoldRefusesABusyGroup: a group with members (a cohort still
// draining) is left alone.
func TestHoldRefusesABusyGroup(t *testing.T) {
	srv := newServer(t, 4)
	other := srv.open(t)
	topic, err := other.Topic(context.Background(), srv.stream, srv.topic, "sink")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Join(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	before := srv.members(t)
	_, err = fanout.Hold(context.Background(), srv.open(t), srv.streams())
	if !errors.Is(err, fanout.ErrBusy) {
		t.Fatalf("Hold on a busy group: %v, want ErrBusy", err)
	}
	if after := srv.members(t); len(after) != 1 || !slices.Equal(after[0].Partitions, before[0].Partitions) {
		t.Fatalf("Hold changed the busy group: %+v -> %+v", before, after)
	}
}

// TestLeaveWaitsForTheOthers: a member done with its partitions stays in
// the group while another member still works on the topic, so that its
// leave does not deal that member's partitions away mid-run. "Still works"
// is a live lease, or a partition with messages that nobody has taken up
// since the join (a member about to start holds no lease yet). The member
// leaves once the others are done, or at its run's deadline.
func TestLeaveWaitsForTheOthers(t *testing.T) {
	const release = 600 * time.Millisecond
	tests := []struct {
		name string
		// other plays the other member on the shared state, from the join on.
		other    func(t *testing.T, leases *state.Memory, key state.Key)
		deadline bool // the wait ends at the run's deadline, not at release
	}{
		{"other member finishes", func(t *testing.T, leases *state.Memory, key state.Key) {
			st, err := leases.Acquire(context.Background(), key, "member-b", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(release, func() { _ = leases.Release(context.Background(), st) })
		}, false},
		{"other member starts late", func(t *testing.T, leases *state.Memory, key state.Key) {
			time.AfterFunc(release/2, func() {
				st, err := leases.Acquire(context.Background(), key, "member-b", time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				time.AfterFunc(release/2, func() { _ = leases.Release(context.Background(), st) })
			})
		}, false},
		{"other member never finishes", func(t *testing.T, leases *state.Memory, key state.Key) {
			if _, err := leases.Acquire(context.Background(), key, "member-b", time.Minute); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, 2)
			srv.send(t, 0)
			srv.send(t, 1)
			anchor, err := fanout.Hold(context.Background(), srv.open(t), srv.streams())
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			cohort := &fanout.Cohort{ID: "test", Workers: 1, Anchors: anchor.Anchors(), NotAfter: start.Add(5 * time.Second), SettleBy: start.Add(7 * time.Second)}
			go anchor.Release(context.Background(), 1, cohort.NotAfter)
			leases := state.NewMemory(nil)
			st := &fanout.Settler{Cohort: cohort, Leases: leases, Owner: "member-a", Log: slog.New(slog.DiscardHandler)}
			conn := st.Wrap(srv.open(t))
			runCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // the run's deadline
			defer cancel()
			topic, err := conn.Topic(runCtx, srv.stream, srv.topic, "sink")
			if err != nil {
				t.Fatal(err)
			}
			if err := conn.Join(runCtx, topic); err != nil {
				t.Fatal(err)
			}
			key := func(p uint32) state.Key {
				return state.Key{Group: "sink", Stream: srv.stream, Topic: srv.topic, Partition: p}
			}
			// This member drained partition 0; the other one has partition 1.
			own, err := leases.Acquire(context.Background(), key(0), "member-a", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := leases.Release(context.Background(), own); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			tc.other(t, leases, key(1))
			// The drain leaves with a short clean-up context; the wait is bounded by the run's deadline instead.
			leaveCtx, cancelLeave := context.WithTimeout(runCtx, 100*time.Millisecond)
			defer cancelLeave()
			if err := conn.Leave(leaveCtx, topic); err != nil {
				t.Fatal(err)
			}
			took := time.Since(began)
			if n := len(srv.members(t)); n != 0 {
				t.Fatalf("%d members after the leave, want 0", n)
			}
			dl, _ := runCtx.Deadline()
			switch {
			case !tc.deadline && (took < release || took > release+2*time.Second):
				t.Fatalf("left after %v; want soon after the other member was done (%v)", took, release)
			case tc.deadline && (time.Now().Before(dl.Add(-50*time.Millisecond)) || took > 5*time.Second):
				t.Fatalf("left after %v; want at the run's deadline (%v)", took, time.Until(dl))
			}
			if l := st.Lingered(); len(l) != 1 {
				t.Fatalf("lingered %v, want one wait", l)
			}
		})
	}
}

package fanout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/s3fake"
)

// fanOutFixture is a broker with 8 partitions of 300 messages, an
// in-process S3 and one state store that every sink shares, as every
// invocation shares the DynamoDB table.
type fanOutFixture struct {
	broker *iggytest.Broker
	s3     *s3fake.Server
	state  *state.Memory
	env    map[string]string
}

func newFanOutFixture(t *testing.T, maxWorkers int) *fanOutFixture {
	t.Helper()
	b, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Seed("app", "logs", 8, 2400); err != nil {
		t.Fatal(err)
	}
	s3 := s3fake.Start(t)
	s3.CreateBucket(t, "fan")
	return &fanOutFixture{broker: b, s3: s3, state: state.NewMemory(nil), env: map[string]string{
		"IGGY_ADDRESS": b.Addr(), "SINK_STREAM": "app", "SINK_TOPICS": "logs", "SINK_BUCKET": "fan", "SINK_PREFIX": "p",
		"SINK_REGION": "us-east-1", "SINK_ENDPOINT": s3.Endpoint, "SINK_ACCESS_KEY_ID": s3.AccessKey, "SINK_SECRET_ACCESS_KEY": s3.SecretKey,
		"SINK_FILE_ROTATION": "messages", "SINK_MAX_MESSAGES_PER_FILE": "100", "SINK_MAX_FILE_AGE": "1ms",
		"SINK_MAX_WORKERS": fmt.Sprint(maxWorkers), "SINK_WORKER_RATE": "1", "SINK_SETTLE_TIMEOUT": "3s",
	}}
}

// sink is one invocation's sink (its own clients), on the shared state.
func (f *fanOutFixture) sink(t *testing.T) *app.Sink {
	t.Helper()
	cfg, err := config.Load("", envOf(f.env))
	if err != nil {
		t.Fatal(err)
	}
	s, err := app.New(context.Background(), cfg, app.Options{State: f.state, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// localInvoker stands in for Lambda's asynchronous Invoke: each payload
// runs as a worker on a sink of its own, in a goroutine.
type localInvoker struct {
	t       *testing.T
	f       *fanOutFixture
	fail    error
	wg      sync.WaitGroup
	mu      sync.Mutex
	results []*fanout.Result
	errs    []error
}

func (l *localInvoker) Start(ctx context.Context, payload []byte) error {
	if l.fail != nil {
		return l.fail
	}
	req, err := fanout.Parse(payload)
	if err != nil || req.Mode != fanout.ModeWorker {
		return fmt.Errorf("not a worker payload: %v: %s", err, payload)
	}
	s := l.f.sink(l.t)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		res, err := s.Coordinator().Work(context.WithoutCancel(ctx), req.Cohort, fanout.TickOptions{})
		l.mu.Lock()
		defer l.mu.Unlock()
		l.results, l.errs = append(l.results, res), append(l.errs, err)
	}()
	return nil
}

func deadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestTickWithOneWorkerIsARun(t *testing.T) {
	f := newFanOutFixture(t, 1)
	res, err := f.sink(t).Coordinator().Tick(deadline(t, time.Minute), fanout.TickOptions{Invoker: &localInvoker{t: t, f: f, fail: errors.New("must not be called")}})
	if err != nil || res.FanOut != nil || res.Messages != 2400 {
		t.Fatalf("tick: %v, fan-out %+v, %d messages; want a plain run of all 2400", err, res.FanOut, res.Messages)
	}
	// The result's JSON is the summary's, as before fan-out.
	b, _ := json.Marshal(res)
	plain, _ := json.Marshal(res.Summary)
	if !bytes.Equal(b, plain) {
		t.Fatalf("result JSON differs from the summary's:\n%s\n%s", b, plain)
	}
}

func TestTickFansOut(t *testing.T) {
	f := newFanOutFixture(t, 3)
	inv := &localInvoker{t: t, f: f}
	var emfOut bytes.Buffer
	rate := &fanout.Rate{}
	res, err := f.sink(t).Coordinator().Tick(deadline(t, time.Minute), fanout.TickOptions{Invoker: inv, ID: "tick-1", Rate: rate,
		Metrics: &metrics.EMF{W: &emfOut, Function: "fn"}})
	inv.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	fo := res.FanOut
	if fo == nil || fo.Plan == nil || fo.Plan.Workers != 3 || fo.Started != 2 || fo.Workers != 3 || fo.Gathered != 3 || fo.Cohort != "tick-1" {
		t.Fatalf("fan-out %+v", fo)
	}
	all := append([]*fanout.Result{res}, inv.results...)
	drainedBy := map[uint32]int{}
	var total uint64
	for i, r := range all {
		if i > 0 && inv.errs[i-1] != nil {
			t.Fatalf("worker %d: %v", i, inv.errs[i-1])
		}
		total += r.Messages
		for _, p := range r.Partitions {
			if p.Objects > 0 {
				drainedBy[p.Partition]++
			}
		}
		if len(r.FanOut.Settled) != 1 || r.FanOut.Settled[0].TimedOut || r.FanOut.Settled[0].Late {
			t.Errorf("member %d settled as %+v", i, r.FanOut.Settled)
		}
	}
	if total != 2400 || len(drainedBy) != 8 {
		t.Fatalf("cohort drained %d messages over %d partitions, want 2400 over 8", total, len(drainedBy))
	}
	for p, n := range drainedBy {
		if n != 1 {
			t.Errorf("partition %d drained by %d members", p, n)
		}
	}
	if !strings.Contains(emfOut.String(), `"Workers":3,"WorkersStarted":2`) {
		t.Errorf("fan-out metrics: %s", emfOut.String())
	}
}

// TestTickLeavesABusyGroupAlone: with fan-out on, a tick that finds a
// member in the group (a cohort still draining) neither starts workers nor
// joins, whether the lag wants several workers or one.
func TestTickLeavesABusyGroupAlone(t *testing.T) {
	for _, rate := range []string{"1", "100000000"} {
		t.Run("worker_rate "+rate, func(t *testing.T) { tickBesideAMember(t, rate) })
	}
}

func tickBesideAMember(t *testing.T, rate string) {
	f := newFanOutFixture(t, 3)
	f.env["SINK_WORKER_RATE"] = rate
	conn, err := source.Open(context.Background(), source.Config{Address: f.broker.Addr(), Username: "iggy", Password: "iggy", ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	topic, err := conn.Topic(context.Background(), "app", "logs", "iggy-connect-sink-s3")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Join(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	inv := &localInvoker{t: t, f: f}
	res, err := f.sink(t).Coordinator().Tick(deadline(t, time.Minute), fanout.TickOptions{Invoker: inv})
	if err != nil || res.FanOut == nil || !strings.Contains(res.FanOut.Skipped, "a cohort is still draining") || res.Messages != 0 || len(inv.results) != 0 {
		t.Fatalf("tick beside a live member: %v, %+v, %d messages, %d workers", err, res.FanOut, res.Messages, len(inv.results))
	}
	if members, err := conn.GroupMembers(context.Background(), topic); err != nil || len(members) != 1 || len(members[0].Partitions) != 8 {
		t.Fatalf("the tick changed the group: %+v, %v", members, err)
	}
	if n := f.s3.Requests(s3fake.OpPut); n != 0 {
		t.Fatalf("%d objects written", n)
	}
}

func TestTickDrainsAloneWhenWorkersCannotStart(t *testing.T) {
	f := newFanOutFixture(t, 3)
	inv := &localInvoker{t: t, f: f, fail: errors.New("fan-out: invoke fn: access denied")}
	res, err := f.sink(t).Coordinator().Tick(deadline(t, time.Minute), fanout.TickOptions{Invoker: inv})
	if err != nil {
		t.Fatal(err)
	}
	if fo := res.FanOut; fo.Started != 0 || len(fo.StartErrors) != 2 || fo.Workers != 1 || res.Messages != 2400 {
		t.Fatalf("fan-out %+v, %d messages; want the tick alone to drain all 2400", fo, res.Messages)
	}
}

func TestWorkTooLate(t *testing.T) {
	f := newFanOutFixture(t, 3)
	before := f.broker.Connections()
	past := time.Now().Add(-time.Second)
	res, err := f.sink(t).Coordinator().Work(deadline(t, time.Minute), &fanout.Cohort{ID: "old", Workers: 2,
		Anchors: []fanout.Anchored{{Stream: "app", Topic: "logs", Group: "iggy-connect-sink-s3"}}, NotAfter: past, SettleBy: past}, fanout.TickOptions{})
	if err != nil || res.FanOut == nil || !strings.Contains(res.FanOut.Skipped, "too late to take part") || res.Messages != 0 {
		t.Fatalf("late worker: %v %+v", err, res.FanOut)
	}
	if n := f.broker.Connections(); n != before {
		t.Fatalf("a late worker connected to Iggy (%d -> %d connections)", before, n)
	}
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestWarmCoordinatorSettles: a warm process (it has drained every
// partition before) coordinates a cohort after new messages reach two of
// the eight partitions. Its member run takes every lease it was given, so
// that the cohort settles at once rather than when its time runs out (a
// member that left its idle partitions alone wrote no state for them, and
// the settling waits for a write of each).
func TestWarmCoordinatorSettles(t *testing.T) {
	f := newFanOutFixture(t, 2)
	f.env["SINK_RUN_TIMEOUT"] = "25s"
	warm := f.sink(t)
	for range 2 {
		if _, err := warm.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for p := uint32(0); p < 2; p++ {
		for range 100 {
			if _, err := f.broker.Append("app", "logs", p, []byte(`{"a":1}`), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	inv := &localInvoker{t: t, f: f}
	res, err := warm.Coordinator().Tick(deadline(t, time.Minute), fanout.TickOptions{Invoker: inv, ID: "warm"})
	inv.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "" {
		t.Fatalf("the coordinator's member stopped: %q; want it to settle and finish", res.Stopped)
	}
	for i, r := range inv.results {
		if inv.errs[i] != nil || r.Stopped != "" {
			t.Fatalf("worker %d: %v, stopped %q", i, inv.errs[i], r.Stopped)
		}
	}
}

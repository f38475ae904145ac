package replay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/archive"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

var layouts = []archive.Layout{
	{Format: batch.FormatJSONLines, Schema: batch.SchemaJSON, Metadata: true, Headers: true},
	{Format: batch.FormatJSONArray, Compression: batch.CompressionGzip, Schema: batch.SchemaJSON, Metadata: true, Headers: true},
	{Format: batch.FormatJSONLines, Compression: batch.CompressionZstd, Schema: batch.SchemaJSON, Metadata: true, Headers: true},
	{Format: batch.FormatParquet, Schema: batch.SchemaJSON, Metadata: true, Headers: true},
}

// dialects are the broker's three, or "real": the server
// IGGY_TEST_ADDRESS names.
func dialects(t *testing.T) []string {
	if os.Getenv("IGGY_TEST_ADDRESS") != "" {
		return []string{"real"}
	}
	return []string{"0.8", "0.9", "0.10"}
}

// seeds are MODEL_SEED's one seed, or 1..MODEL_SEEDS (default 10).
func seeds(t *testing.T) []uint64 {
	if s := os.Getenv("MODEL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MODEL_SEED=%q: %v", s, err)
		}
		return []uint64{n}
	}
	n := 10
	if s := os.Getenv("MODEL_SEEDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("MODEL_SEEDS=%q: %v", s, err)
		}
		n = v
	}
	var out []uint64
	for i := 1; i <= n; i++ {
		out = append(out, uint64(i))
	}
	return out
}

// TestModel replays a seeded archive through rounds of seeded
// interleavings: processes killed at a random call (before it, or after it
// took effect), stalled past their lease, two at once, the state table
// replaced between rounds, the target deleted and created again, and a
// foreign producer writing into the target.
// Then a clean process finishes, and every partition must hold the archive
// exactly once, in order (a foreign producer's partition: each archived
// message at most once, in order, and reported).
func TestModel(t *testing.T) {
	s3srv := testenv.StartVersity(t)
	for _, seed := range seeds(t) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("replay: MODEL_SEED=%d go test -run 'TestModel/^%d$' ./internal/replay", seed, seed)
				}
			}()
			rng := rand.New(rand.NewPCG(seed, 44))
			ds := dialects(t)
			protocol := ds[rng.IntN(len(ds))]
			layout := layouts[rng.IntN(len(layouts))]
			w := newWorld(t, s3srv, rng, protocol, 1+rng.IntN(3), layout, rng.IntN(3) > 0)
			foreign := map[uint32]bool{}
			reported := map[uint32]bool{}
			withForeign := rng.IntN(4) == 0
			for round := 0; round < 6+rng.IntN(6); round++ {
				switch {
				case rng.IntN(8) == 0:
					time.Sleep(ttl) // the dead runs' leases expire
					w.replaceState()
				case round > 0 && rng.IntN(10) == 0:
					// An operator deletes the target and creates it again:
					// the replay starts again in the new one.
					if err := w.admin.DeleteTopic(w.targetStream, "events"); err != nil {
						t.Fatal(err)
					}
					if _, err := w.admin.CreateTopic(w.targetStream, "events", len(w.plans)); err != nil {
						t.Fatal(err)
					}
					clear(foreign)
					clear(reported)
				case withForeign && len(foreign) == 0 && rng.IntN(3) == 0:
					p := w.plans[rng.IntN(len(w.plans))].Partition
					if _, err := w.admin.Append(w.targetStream, "events", p, []byte(`{"foreign":true}`), nil); err == nil {
						foreign[p] = true
					}
				}
				n := 1 + rng.IntN(2)
				var wg sync.WaitGroup
				results := make([][]Result, n)
				for i := range n {
					f := &faults{killAt: -1, stallAt: -1}
					if rng.IntN(3) > 0 {
						f.killAt, f.after = rng.IntN(40), rng.IntN(2) == 0
					}
					if rng.IntN(6) == 0 {
						f.stallAt = rng.IntN(30)
					}
					proc := w.process(fmt.Sprintf("r%d-%d", round, i), f)
					prng := rand.New(rand.NewPCG(rng.Uint64(), 1))
					wg.Add(1)
					go func() {
						defer wg.Done()
						results[i] = proc.run(prng)
					}()
				}
				wg.Wait()
				for _, rs := range results {
					for _, r := range rs {
						acceptable(t, r, foreign, reported)
					}
				}
			}
			time.Sleep(ttl + 50*time.Millisecond) // every lease of a dead run expires
			final := w.process("final", nil)
			for _, r := range final.run(rng) {
				switch {
				case foreign[r.Partition]:
					if !errors.Is(r.Err, ErrForeign) && !errors.Is(r.Err, ErrNotEmpty) && !reported[r.Partition] {
						t.Fatalf("partition %d: a foreign producer wrote into it and no run reported it (final: %v)", r.Partition, r.Err)
					}
				case r.Err != nil:
					t.Fatalf("partition %d: the final run: %v", r.Partition, r.Err)
				}
			}
			w.check(foreign)
		})
	}
}

// acceptable fails on a result no interleaving explains.
func acceptable(t *testing.T, r Result, foreign, reported map[uint32]bool) {
	t.Helper()
	switch {
	case r.Err == nil, errors.Is(r.Err, errKilled), errors.Is(r.Err, state.ErrLeaseHeld), errors.Is(r.Err, state.ErrLeaseLost):
	case (errors.Is(r.Err, ErrForeign) || errors.Is(r.Err, ErrNotEmpty)) && foreign[r.Partition]:
		// ErrNotEmpty: the state was replaced, and the target's last
		// message is the foreign one.
		reported[r.Partition] = true
	case isDeadline(r.Err):
		// a stalled process's send past its lease: not sent
	default:
		t.Fatalf("partition %d: %v", r.Partition, r.Err)
	}
}

func isDeadline(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || err != nil && strings.Contains(err.Error(), "not sent")
}

// TestCrashAtEveryStep kills a replay at each of its calls in turn, before
// the call and after it took effect, then runs it again: every archived
// message lands exactly once, in order, at its archived offset. Once into
// a fresh target, once into a target deleted and created again after a
// full replay into it (the state then names the old one).
func TestCrashAtEveryStep(t *testing.T) {
	s3srv := testenv.StartVersity(t)
	for _, protocol := range dialects(t) {
		for _, recreated := range []bool{false, true} {
			name := protocol
			if recreated {
				name += "/recreated"
			}
			t.Run(name, func(t *testing.T) {
				world := func() *world {
					w := newWorld(t, s3srv, rand.New(rand.NewPCG(3, 3)), protocol, 1, layouts[0], false)
					if recreated {
						replayAll(t, w.process("first", nil))
						if err := w.admin.DeleteTopic(w.targetStream, "events"); err != nil {
							t.Fatal(err)
						}
						if _, err := w.admin.CreateTopic(w.targetStream, "events", len(w.plans)); err != nil {
							t.Fatal(err)
						}
					}
					return w
				}
				// How many calls a clean replay of this archive makes.
				clean := world()
				f := &faults{killAt: -1, stallAt: -1}
				replayAll(t, clean.process("count", f))
				clean.check(nil)
				steps := f.calls
				if steps < 8 {
					t.Fatalf("a clean replay made only %d calls", steps)
				}
				for k := range steps {
					for _, after := range []bool{false, true} {
						w := world()
						killed := w.process("killed", &faults{killAt: k, after: after, stallAt: -1})
						for _, r := range killed.run(rand.New(rand.NewPCG(1, 1))) {
							if !errors.Is(r.Err, errKilled) {
								t.Fatalf("step %d (after %v): the killed run ended with %v", k, after, r.Err)
							}
						}
						time.Sleep(ttl + 50*time.Millisecond)
						for _, r := range w.process("again", nil).run(rand.New(rand.NewPCG(1, 1))) {
							if r.Err != nil {
								t.Fatalf("step %d (after %v): the run after the kill: %v", k, after, r.Err)
							}
							if !r.Aligned && r.Replayed > 0 {
								t.Fatalf("step %d (after %v): the target's offsets are not the archive's", k, after)
							}
						}
						w.check(nil)
					}
				}
			})
		}
	}
}

// replayAll replays every partition with p, which must not fail.
func replayAll(t *testing.T, p *process) {
	t.Helper()
	for _, r := range p.run(rand.New(rand.NewPCG(1, 1))) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// TestStopByGoesOn: a replay that runs out of time (a Lambda invocation's)
// stops between chunks, not an error, and the next run goes on: the
// archive lands once, in order.
func TestStopByGoesOn(t *testing.T) {
	s3srv := testenv.StartVersity(t)
	w := newWorld(t, s3srv, rand.New(rand.NewPCG(5, 5)), "0.9", 2, layouts[0], false)
	r := w.process("stopping", nil).replayer()
	r.Opts.Progress = func(p Progress) { // out of time after each chunk
		if p.Messages > 0 {
			r.Opts.StopBy = time.Now()
		}
	}
	for round := 0; ; round++ {
		if round > 500 {
			t.Fatal("the replay did not finish")
		}
		done := true
		for _, plan := range w.plans {
			res := r.Partition(context.Background(), plan)
			if res.Err != nil {
				t.Fatalf("round %d partition %d: %v", round, plan.Partition, res.Err)
			}
			if res.Replayed > uint64(r.Opts.ChunkMessages) {
				t.Fatalf("round %d: %d messages after the time was up", round, res.Replayed)
			}
			done = done && !res.Stopped
		}
		if done {
			break
		}
		r.Opts.StopBy = time.Time{}
	}
	w.check(nil)
}

// lateTarget's first Send fails at once and lands later: a send whose
// bytes reach the server after the sender gave up on it.
type lateTarget struct {
	Target
	wg   *sync.WaitGroup
	once *sync.Once
}

func (lt lateTarget) Send(ctx context.Context, p uint32, msgs []source.Outgoing) (uint64, bool, error) {
	late := false
	lt.once.Do(func() { late = true })
	if !late {
		return lt.Target.Send(ctx, p, msgs)
	}
	lt.wg.Add(1)
	go func() {
		defer lt.wg.Done()
		time.Sleep(ttl / 4)
		_, _, _ = lt.Target.Send(context.Background(), p, msgs)
	}()
	return 0, false, errors.New("connection reset (test)")
}

// TestFailedSendKeepsLease: a run whose send failed does not give its
// lease back, so a run right after it cannot find the chunk not landed
// and send it again while the first send is still on its way.
func TestFailedSendKeepsLease(t *testing.T) {
	s3srv := testenv.StartVersity(t)
	w := newWorld(t, s3srv, rand.New(rand.NewPCG(7, 7)), "0.9", 1, layouts[0], false)
	var wg sync.WaitGroup
	r := w.process("failing", nil).replayer()
	r.Target = lateTarget{Target: r.Target, wg: &wg, once: &sync.Once{}}
	res := r.Partition(context.Background(), w.plans[0])
	if res.Err == nil || !strings.Contains(res.Err.Error(), "may have landed") {
		t.Fatalf("the run whose send failed: %v", res.Err)
	}
	for _, r := range w.process("right-after", nil).run(rand.New(rand.NewPCG(1, 1))) {
		if !errors.Is(r.Err, state.ErrLeaseHeld) {
			t.Fatalf("a run right after the failed send: %v; want the lease still held", r.Err)
		}
	}
	wg.Wait()
	time.Sleep(ttl + 50*time.Millisecond)
	for _, r := range w.process("after-expiry", nil).run(rand.New(rand.NewPCG(1, 1))) {
		if r.Err != nil {
			t.Fatalf("the run after the lease expired: %v", r.Err)
		}
		if !strings.Contains(r.Resumed, "had landed") {
			t.Fatalf("the run after the lease expired resumed with %q; want the late chunk found landed", r.Resumed)
		}
	}
	w.check(nil)
}

// TestOneRunTwiceOnAPartition: two calls of one replayer on one partition
// at once (a partition named twice) fence each other as two runs do.
func TestOneRunTwiceOnAPartition(t *testing.T) {
	s3srv := testenv.StartVersity(t)
	w := newWorld(t, s3srv, rand.New(rand.NewPCG(9, 9)), "0.9", 1, layouts[0], false)
	r := w.process("a", nil).replayer() // a connection takes concurrent calls one at a time
	results := make([]Result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = r.Partition(context.Background(), w.plans[0]) })
	}
	wg.Wait()
	for _, res := range results {
		if res.Err != nil && !errors.Is(res.Err, state.ErrLeaseHeld) {
			t.Fatal(res.Err)
		}
	}
	for _, r := range w.process("after", nil).run(rand.New(rand.NewPCG(1, 1))) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	w.check(nil)
}

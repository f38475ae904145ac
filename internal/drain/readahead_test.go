package drain_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// readAheadKept is the line a run logs when a partition kept the run's
// read-ahead slot to its end (drain's fanOut).
const readAheadKept = "read-ahead slot was not given back"

// TestReadAheadOutlivesAFailedStep: a run shares one read-ahead slot
// among its partitions, and an object read ahead holds it until it is
// given back. Whichever way an object's step ends — its partition moved
// (an offset store refused with 5009 after a rebalance), the state write
// that completes the object failed, or the next object's early upload
// failed to open — the object read ahead beside it gives the slot back:
// the partitions drained after it still read ahead (the upload of their
// second object begins while their first is in flight), the run logs no
// kept slot, and later runs archive every offset once.
//
// Each partition's first object is held in its upload until the second
// one's begins (overlapWatcher), so the second is always the one read
// ahead when the step fails; one partition is drained at a time, so the
// partitions after the failed one meet the slot it left.
func TestReadAheadOutlivesAFailedStep(t *testing.T) {
	const partitions, perPartition = 3, 60
	eachBackend(t, func(t *testing.T, w *world) {
		for _, tc := range []struct {
			name string
			// inject sets the fault up for the first partition that reaches it.
			inject func(t *testing.T, w *world, opts *app.Options, cfgState func() drain.StateStore)
			// check looks at the failed run's outcome.
			check func(t *testing.T, sum *drain.Summary, err error)
			// crashes: the run stops at the fault, and no other partition
			// is drained after it.
			crashes bool
		}{
			{
				name: "offset store refused after a rebalance",
				inject: func(t *testing.T, w *world, _ *app.Options, _ func() drain.StateStore) {
					status := vsr.StatusPartitionNotOwned // 5009 on 0.9 and 0.10
					if iggyadmin.BrokerProtocol(t) == "0.8" {
						status = iggytest.StatusGroupMemberNotFound // 0.8 has no 5009
					}
					w.hooks(t).FailCommand(iggytest.CodeStoreConsumerOffset, status, 1)
				},
				check: func(t *testing.T, sum *drain.Summary, err error) {
					if err != nil {
						t.Fatalf("a run that lost a partition: %v", err)
					}
					oneRefused(t, sum, perPartition, "stopped as moved", func(p drain.PartitionSummary) bool { return p.Stopped == "partition moved to another member" })
				},
			},
			{
				name: "complete refused",
				inject: func(t *testing.T, w *world, opts *app.Options, st func() drain.StateStore) {
					opts.State = &refusingComplete{StateStore: st()}
				},
				check: func(t *testing.T, sum *drain.Summary, err error) {
					if !errors.Is(err, errRefused) {
						t.Fatalf("a run whose complete is refused: %v, want the refusal", err)
					}
					oneRefused(t, sum, perPartition, "failed", func(p drain.PartitionSummary) bool { return p.Error != "" })
				},
			},
			{
				name: "early open failed",
				inject: func(t *testing.T, w *world, opts *app.Options, _ func() drain.StateStore) {
					// A partition's second StepMidUpload is where its second
					// object's early upload opens, after the first's complete.
					var mu sync.Mutex
					seen, crashed := map[uint32]int{}, false
					opts.Hooks = crashAt(func(s drain.Step, p batch.Partition) error {
						if s != drain.StepMidUpload {
							return nil
						}
						mu.Lock()
						defer mu.Unlock()
						if seen[p.ID]++; seen[p.ID] == 2 && !crashed {
							crashed = true
							return errors.New("injected: the early upload's open failed")
						}
						return nil
					})
				},
				check: func(t *testing.T, _ *drain.Summary, err error) {
					if !errors.Is(err, drain.ErrCrash) {
						t.Fatalf("a run whose early open fails: %v, want the crash", err)
					}
				},
				crashes: true,
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w := w.with(t)
				name := "readahead-" + strings.ReplaceAll(tc.name, " ", "-")
				w.produce(name, partitions, perPartition, 100)
				set := w.settings(name, name)
				set["SINK_FILE_ROTATION"] = "messages"
				set["SINK_MAX_MESSAGES_PER_FILE"] = "20"
				set["SINK_PARTITION_CONCURRENCY"] = "1"
				cfg := w.config(set)
				logs := &testenv.LockedBuffer{}
				opts := app.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
				tc.inject(t, w, &opts, func() drain.StateStore { return w.stateStore(cfg.Plugin.StateTable) })
				s := w.sink(cfg, opts)
				o := newOverlapWatcher(s.Objects, nil)
				s.Objects = o
				sum, err := s.Run(context.Background())
				tc.check(t, sum, err)
				if !tc.crashes {
					// Every partition's second upload began while its first
					// was in flight: the ones after the failure too.
					var missed []string
					overlapped := o.overlaps()
					for _, p := range sum.Partitions {
						hit := false
						for _, prefix := range overlapped {
							hit = hit || strings.HasSuffix(prefix, fmt.Sprintf("/%05d", p.Partition))
						}
						if !hit {
							missed = append(missed, fmt.Sprint(p.Partition))
						}
					}
					if len(missed) > 0 {
						t.Fatalf("partitions %s read no object ahead (overlapping uploads: %v): the failed step kept the run's read-ahead slot", strings.Join(missed, ", "), overlapped)
					}
				}
				if strings.Contains(logs.String(), readAheadKept) {
					t.Fatalf("the run ended with its read-ahead slot kept by a partition:\n%s", logs.String())
				}
				after := w.sink(cfg, app.Options{})
				w.drainUntilQuiet(after, name, 20) // a crashed run keeps its lease
				w.checkExactlyOnce(after, name, "json_lines")
				w.auditClean(after)
			})
		}
	})
}

// oneRefused checks that exactly one partition ended as refused says
// (what), and that every other one archived all its messages.
func oneRefused(t *testing.T, sum *drain.Summary, messages uint64, what string, refused func(drain.PartitionSummary) bool) {
	t.Helper()
	n := 0
	for _, p := range sum.Partitions {
		if refused(p) {
			n++
		} else if p.Messages != messages {
			t.Fatalf("partition %d: %d messages archived, want %d: %+v", p.Partition, p.Messages, messages, p)
		}
	}
	if n != 1 {
		t.Fatalf("%d partitions %s, want the one refused: %+v", n, what, sum.Partitions)
	}
}

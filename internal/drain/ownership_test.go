package drain_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
)

// TestOwnershipMovesMidRun: on Iggy 0.9 and 0.10 a member that joins the
// consumer group mid-run takes a partition from a run in progress. The run
// stops writing that partition when the server fences it (the re-sync
// sentinel on a poll, 5009 on an offset store once the hand-over is
// complete), no offset is ever stored for it after the refusal, and every
// message is still archived exactly once by the runs that follow.
func TestOwnershipMovesMidRun(t *testing.T) {
	if p := iggyadmin.BrokerProtocol(t); p == "0.8" {
		t.Skip("0.9/0.10 group semantics (Sync, sentinel, 5009); 0.8's hand-overs are in TestConcurrentRuns")
	}
	// A hand-over completes when the old owner's stored offset reaches its
	// last poll, or after the rebalance timeout: short, so that the run's
	// next offset store meets a completed one.
	eachBackendWith(t, []iggytest.Option{iggytest.WithRebalanceTimeout(50 * time.Millisecond)}, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		const topic = "moving"
		w.produce(topic, 2, 300, 200)
		set := w.settings("moving", topic)
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "50"
		set["SINK_BATCH_LENGTH"] = "50"
		set["SINK_PARTITION_CONCURRENCY"] = "2"
		cfg := w.config(set)
		group := cfg.Streams[0].ConsumerGroup
		ctx := context.Background()

		// Both partitions hold their first offset store until the other
		// member has joined and the hand-over is complete, so that the one
		// that moved meets the refusal (5009) whatever else its reader
		// did meanwhile.
		var once sync.Once
		var other *source.Conn
		var mu sync.Mutex
		arrived := map[uint32]bool{}
		joined := make(chan struct{})
		joinMidRun := stepFunc(func(s drain.Step, p batch.Partition) error {
			if s != drain.StepBeforeStore {
				return nil
			}
			mu.Lock()
			first := !arrived[p.ID]
			arrived[p.ID] = true
			both := len(arrived) == 2
			mu.Unlock()
			if !first {
				return nil
			}
			if !both {
				select {
				case <-joined:
				case <-time.After(5 * time.Second):
					t.Error("the other partition never reached its first offset store")
				}
				return nil
			}
			once.Do(func() {
				defer close(joined)
				c, err := source.Open(ctx, source.Config{Address: broker.Addr(), Username: w.user, Password: w.password})
				if err != nil {
					t.Error(err)
					return
				}
				tp, err := c.Topic(ctx, w.stream, topic, group)
				if err == nil {
					err = c.Join(ctx, tp)
				}
				if err != nil {
					t.Error(err)
				}
				other = c
				time.Sleep(100 * time.Millisecond) // past the rebalance timeout
			})
			return nil
		})
		sum, err := w.sink(cfg, app.Options{Hooks: []drain.Hook{joinMidRun}}).Run(ctx)
		if err != nil {
			t.Fatalf("the run that lost a partition: %v", err)
		}
		stores := broker.OffsetStores()
		moved := -1
		for _, p := range sum.Partitions {
			if p.Stopped == "partition moved to another member" {
				moved = int(p.Partition)
			}
		}
		if moved < 0 {
			t.Fatalf("no partition stopped as moved: %+v", sum.Partitions)
		}
		refusedAt := -1
		for i, s := range stores {
			if s.Group != group || s.Partition != uint32(moved) {
				continue
			}
			switch {
			case s.Status == vsr.StatusPartitionNotOwned && refusedAt < 0:
				refusedAt = i
			case s.Status == 0 && refusedAt >= 0:
				t.Fatalf("offset %d of partition %d was stored after the server refused a store for it (it had moved)", s.Offset, moved)
			}
		}
		if refusedAt < 0 {
			t.Fatalf("the run stored every offset of partition %d; want a store refused with 5009 after the hand-over: %+v", moved, stores)
		}
		if other == nil {
			t.Fatal("the other member never joined")
		}
		other.Close() // it leaves: the partitions deal back to whoever drains next

		s := w.sink(cfg, app.Options{})
		w.drainUntilQuiet(s, topic, 20)
		w.checkExactlyOnce(s, topic, "json_lines")
		w.auditClean(s)
	})
}

// TestKeepaliveThroughALongObject: a 0.9 server evicts a group member whose
// connection sends nothing for 1.2 heartbeat intervals, and an object's
// upload can keep a run's connection silent that long. The client's pings
// keep the run a member through it; without them the server evicts it
// (the control).
func TestKeepaliveThroughALongObject(t *testing.T) {
	if p := iggyadmin.BrokerProtocol(t); p == "0.8" {
		t.Skip("heartbeat eviction is 0.9/0.10's")
	}
	eachBackendWith(t, []iggytest.Option{iggytest.WithHeartbeat(300 * time.Millisecond)}, func(t *testing.T, w *world) {
		w.hooks(t) // the broker's short heartbeat
		for _, tc := range []struct {
			name, keepalive string
			evicted         bool
		}{{"pings", "100ms", false}, {"no pings in time", "1h", true}} {
			t.Run(tc.name, func(t *testing.T) {
				w := w.with(t)
				topic := "long-" + tc.keepalive
				w.produce(topic, 1, 120, 200)
				set := w.settings(topic, topic)
				set["SINK_FILE_ROTATION"] = "messages"
				set["SINK_MAX_MESSAGES_PER_FILE"] = "40"
				set["IGGY_KEEPALIVE"] = tc.keepalive
				var once sync.Once
				slowUpload := stepFunc(func(s drain.Step, _ batch.Partition) error {
					if s == drain.StepMidUpload {
						once.Do(func() { time.Sleep(1200 * time.Millisecond) }) // four heartbeat intervals
					}
					return nil
				})
				s := w.sink(w.config(set), app.Options{Hooks: []drain.Hook{slowUpload}})
				sum, err := s.Run(context.Background())
				if tc.evicted {
					if err == nil || !strings.Contains(err.Error(), "stale client") {
						t.Fatalf("a run silent for four heartbeats: %v, want an eviction for missed heartbeats", err)
					}
					return
				}
				if err != nil || sum.Partitions[0].Messages != 120 {
					t.Fatalf("a run with pings through a long upload: %v (%d messages)", err, sum.Partitions[0].Messages)
				}
				w.checkExactlyOnce(s, topic, "json_lines")
			})
		}
	})
}

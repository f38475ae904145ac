package drain_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// A state item created fresh (a new table name, a deleted table, a restore
// to before the item existed) after the topic was re-created once must not
// start at generation 0, the earlier incarnation's (issue 21, item 2): it
// would adopt the old objects as its own, skip the live incarnation's
// offsets they seem to cover, and put the new messages beside the old
// ones. The generation markers in S3 tie each generation to its
// incarnation, so the fresh item goes on with generation 1.
func TestFreshStateTableAfterRecreation(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.hooks(t) // a quick broker-side delete, as TestTopicRecreated
		topic, cfg, s := w.archivedTopic("fresh", 100)
		old := w.sent(topic)
		w.deleteTopic(topic)
		w.produce(topic, 1, 150, 120) // longer than the old incarnation
		w.drainUntilQuiet(s, topic, 10)

		set := w.settings("fresh", topic)
		set["SINK_STATE_TABLE"] = cfg.Plugin.StateTable
		w.produce(topic, 1, 50, 120)
		w.freshTableArchivesGeneration1(set, topic, old)
	})
}

// staleAssignmentConn answers the first single-message poll of a run as a
// member whose assignment predates a rebalance does on 0.9/0.10: not
// owned, though the group assigns the partition to this member again by
// the time it is asked (a stray run joined and left in between).
type staleAssignmentConn struct {
	drain.Conn
	answered atomic.Bool
}

func (c *staleAssignmentConn) Poll(ctx context.Context, t *source.Topic, p uint32, offset uint64, count uint32, dst []batch.Message) ([]batch.Message, bool, error) {
	if count == 1 && c.answered.CompareAndSwap(false, true) {
		return dst, false, nil
	}
	return c.Conn.Poll(ctx, t, p, offset, count, dst)
}

// withStaleAssignment is a run of s whose connection answers one poll as
// staleAssignmentConn does.
func withStaleAssignment(s *app.Sink) *drain.Runner {
	r := s.Runner()
	dial := r.Dial
	r.Dial = func(ctx context.Context) (drain.Conn, error) {
		c, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		return &staleAssignmentConn{Conn: c}, nil
	}
	return r
}

// A not-owned poll proves nothing about a partition (issue 21, item 5's
// lesson): when a fresh state item reads the message its generation marker
// names and the poll is answered from an assignment a rebalance has since
// changed, the sink must not conclude that the partition ends before that
// message. It did: the fresh item started generation 1 and archived the
// topic's 100 offsets again beside generation 0's (CI's model test, seed
// 249, with stray runs joining and leaving the group).
func TestStaleAssignmentProvesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic, cfg, _ := w.archivedTopic("stale", 100)
		set := w.settings("stale", topic)
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
		set["SINK_STATE_TABLE"] = cfg.Plugin.StateTable + "-new"
		w.stateStore(set["SINK_STATE_TABLE"])
		fresh := w.sink(w.config(set), app.Options{})
		w.produce(topic, 1, 30, 120)
		sum, err := withStaleAssignment(fresh).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p := sum.Partitions[0]; p.Generation != 0 {
			t.Fatalf("after a stale not-owned poll the fresh state item archives generation %d, want 0 (the live incarnation's)", p.Generation)
		}
		w.drainUntilQuiet(fresh, topic, 10)
		w.checkExactlyOnce(fresh, topic, "json_lines")
		w.auditClean(fresh)
	})
}

// The first run of a partition writes its generation marker from the
// partition's first message; when that read was answered from a stale
// assignment (not owned, empty), the run archived the partition with no
// marker, and a fresh state item after a re-creation then took the old
// objects for the live incarnation's (the model test, seed 89).
func TestFirstRunMarksItsGenerationDespiteAStaleAssignment(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.hooks(t) // a quick broker-side delete, as TestTopicRecreated
		topic := uniqueName("stalemark")
		w.produce(topic, 1, 100, 120)
		set := w.settings("stalemark", topic)
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
		s := w.sink(w.config(set), app.Options{})
		// One run, and no other before the re-creation: a later one would
		// write the marker from the state's position.
		if _, err := withStaleAssignment(s).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !w.allCommitted(s, topic) {
			t.Fatal("the first run did not archive the topic")
		}
		old := w.sent(topic)
		w.deleteTopic(topic)
		w.produce(topic, 1, 150, 120)

		w.freshTableArchivesGeneration1(set, topic, old)
	})
}

// freshTableArchivesGeneration1 runs a sink of settings set on a new,
// empty state table after topic was re-created (old is what its earlier
// incarnation received): it must archive the live incarnation as
// generation 1, beside the earlier one's generation 0, audit clean.
func (w *world) freshTableArchivesGeneration1(set map[string]string, topic string, old [][]sent) {
	w.t.Helper()
	set = maps.Clone(set)
	set["SINK_FILE_ROTATION"] = "messages"
	set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
	set["SINK_STATE_TABLE"] += "-new"
	w.stateStore(set["SINK_STATE_TABLE"])
	fresh := w.sink(w.config(set), app.Options{})
	sum, err := fresh.Run(context.Background())
	if err != nil {
		w.t.Fatal(err)
	}
	if p := sum.Partitions[0]; p.Generation != 1 {
		w.t.Fatalf("the fresh state item archives generation %d, want 1 (the generation markers tie generation 0 to the earlier incarnation)", p.Generation)
	}
	w.drainUntilQuiet(fresh, topic, 10)
	all := w.objects(fresh, "archive/")
	w.checkGeneration(all, 0, old, topic, "json_lines")
	w.checkGeneration(all, 1, w.sent(topic), topic, "json_lines")
	w.auditClean(fresh)
}

// A server restart re-stamps 0.8.0's creation times. When the state last
// recorded a gap marker (its offsets gone, so no message of its own to
// look for) and the group had not stored it yet (the run died between the
// two writes), the first message after the gap, whose server time the
// state records with it, still tells the incarnation: the restart is no
// re-creation, and nothing is archived a second time as generation 1
// (found by the model test once it restarted the server).
func TestRestartAfterAGapIsNoRecreation(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		br := w.hooks(t)
		topic := uniqueName("gaprestart")
		w.produce(topic, 1, 10, 100)
		if err := br.DeleteBelow(w.stream, topic, 0, 3); err != nil {
			t.Fatal(err)
		}
		set := w.settings("gaprestart", topic)
		// 3..9 waits, however slow the machine: the gap marker is recorded
		// with no next intent. The restart takes them by age.
		set["SINK_MAX_FILE_AGE"] = "1h"
		cfg := w.config(set)
		set["SINK_MAX_FILE_AGE"] = "500ms"
		restartCfg := w.config(set)
		var killed atomic.Bool
		dies := w.sink(cfg, app.Options{Hooks: crashAt(func(s drain.Step, _ batch.Partition) error {
			if s == drain.StepStateWritten && killed.CompareAndSwap(false, true) {
				return errors.New("killed")
			}
			return nil
		})})
		if _, err := dies.Run(context.Background()); err == nil {
			t.Fatal("the run that dies after recording the gap marker succeeded")
		}
		if off, ok := br.GroupOffset(w.stream, topic, cfg.Streams[0].ConsumerGroup, 0); ok {
			t.Fatalf("the group stored offset %d; want nothing stored (the run died before)", off)
		}
		st, _, err := w.stateStore(cfg.Plugin.StateTable).Get(context.Background(), state.Key{Group: cfg.Streams[0].ConsumerGroup, Stream: w.stream, Topic: topic, Partition: 0})
		if err != nil || !st.HasWritten || st.LastWritten != 2 || st.Intent != nil {
			t.Fatalf("state after the dead run: %+v, %v; want the gap marker of 0..2 written, nothing after", st, err)
		}
		br.Restart()
		time.Sleep(cfg.Plugin.LeaseDuration + 100*time.Millisecond) // the dead run's lease

		s := w.sink(restartCfg, app.Options{})
		sum, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p := sum.Partitions[0]; p.Skipped != "" || p.Recreated || p.Generation != 0 || p.Objects != 1 {
			t.Fatalf("after the restart: %+v; want the object of 3..9 archived, recreated false, generation 0 (the same incarnation)", p)
		}
		if p := sum.Partitions[0]; p.Recreated || p.Generation != 0 {
			t.Fatalf("after the restart: recreated %v, generation %d; want the same incarnation, generation 0", p.Recreated, p.Generation)
		}
		w.drainUntilQuiet(s, topic, 10)
		for _, k := range w.listKeys(s, "archive/") {
			if strings.Contains(k, "-g1") {
				t.Fatalf("%s: the restart started generation 1", k)
			}
		}
		r := w.auditClean(s)[0]
		if r.GapMarkers != 1 || r.Objects != 1 || r.Messages != 7 {
			t.Fatalf("audit %+v; want the gap marker of 0..2 and one object of 3..9", r)
		}
	})
}

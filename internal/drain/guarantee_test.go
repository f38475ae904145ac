package drain_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// The tests in this file each show one way the guarantee ("every offset of
// every partition in exactly one object, or in a reported gap") broke
// before, and hold it now.

// TestTopicRecreated deletes a topic the sink has archived and re-creates it
// under the same name, first shorter than the old position and then longer:
// the new incarnation is archived from offset 0 as generation 1, under
// names that cannot collide with the old objects, and the audit reports
// both generations clean.
func TestTopicRecreated(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.hooks(t) // the real server needs a broker-side delete to be quick; topic deletion through the admin client is covered by iggyadmin
		w.produce("recr", 2, 100, 120)
		set := w.settings("recr", "recr")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, "recr", 10)
		old := w.sent("recr")

		w.deleteTopic("recr")
		w.produce("recr", 2, 30, 120) // shorter than the old position
		sum, err := s.Run(context.Background())
		if err != nil {
			t.Fatalf("first run on the re-created topic: %v", err)
		}
		for _, p := range sum.Partitions {
			if !p.Recreated || p.Generation != 1 {
				t.Fatalf("partition %d: recreated %v generation %d; want the re-creation seen", p.Partition, p.Recreated, p.Generation)
			}
		}
		if !strings.Contains(w.logs.String(), "re-created") {
			t.Fatal("the re-creation is not in the logs")
		}
		w.drainUntilQuiet(s, "recr", 10)
		w.produce("recr", 2, 120, 120) // now longer than the old position
		w.drainUntilQuiet(s, "recr", 10)

		all := w.objects(s, "archive/")
		w.checkGeneration(all, 0, old, "recr", "json_lines")
		for _, o := range w.checkGeneration(all, 1, w.sent("recr"), "recr", "json_lines") {
			if !strings.Contains(o.key, "-g1.jsonl") {
				t.Fatalf("generation 1 object %s is not named apart", o.key)
			}
		}
		reports := w.auditClean(s)
		if len(reports) != 4 || !reports[0].Retired || reports[1].Retired || reports[1].Messages != 150 {
			t.Fatalf("audit: want a retired generation 0 and a live generation 1 per partition, got %+v", reports)
		}
	})
}

// freezable is a state store whose lease renewals hang while frozen: with
// a frozen upload it stands for a whole process that stalls (a frozen
// Lambda container, a long network stall). Renewals thaw last, after the
// upload has gone out, as when the stall ends in the middle of a request.
type freezable struct {
	drain.StateStore
	frozen chan struct{} // closed when the renewals thaw
}

func (f *freezable) Renew(ctx context.Context, s state.State, ttl time.Duration) (state.State, error) {
	<-f.frozen
	return f.StateStore.Renew(ctx, s, ttl)
}

// putWatcher records what every Put returned.
type putWatcher struct {
	app.ObjectStore
	mu   sync.Mutex
	errs map[string]error
}

func (p *putWatcher) Put(ctx context.Context, obj s3store.Object, body []byte) (s3store.Result, error) {
	res, err := p.ObjectStore.Put(ctx, obj, body)
	if isGenerationMarker(obj.Key) {
		return res, err // written before the upload a stale run stalls in
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs[obj.Key] = err
	return res, err
}

// staleRun is a run frozen in the middle of its first upload, whose
// connection has dropped and whose lease has lapsed: another run now has
// its partition.
type staleRun struct {
	puts             *putWatcher
	frozen, renewals chan struct{}
	done             chan *drain.Summary
}

// fencedOut reports whether err is what a stale run's upload of a fenced
// key returns: a conflict with the fence. The stale run froze with its
// first upload begun and held at the gate, and MinIO locks a key while a
// conditional PUT of it is in flight: the fence's write waits for the
// lock, and after 30 s MinIO fails both, so there the held upload may
// also just fail. Either way nothing of it is stored (the callers check
// that the key holds the fence).
func fencedOut(w *world, err error) bool {
	return errors.Is(err, s3store.ErrConflict) || (w.backend == "minio" && err != nil)
}

// startStale starts a run of cfg that freezes at its first mid-upload step
// (its lease renewals held too), and returns once its connection is dropped
// and its lease has run out.
func (w *world) startStale(broker *iggytest.Broker, cfg *config.Config) *staleRun {
	w.t.Helper()
	r := &staleRun{frozen: make(chan struct{}), renewals: make(chan struct{}), done: make(chan *drain.Summary, 1)}
	entered := make(chan struct{})
	var once sync.Once
	freeze := stepFunc(func(s drain.Step, _ batch.Partition) error {
		if s == drain.StepMidUpload {
			once.Do(func() { close(entered); <-r.frozen })
		}
		return nil
	})
	s := w.sink(cfg, app.Options{Hooks: []drain.Hook{freeze}, State: &freezable{w.stateStore(cfg.Plugin.StateTable), r.renewals}})
	r.puts = &putWatcher{ObjectStore: s.Objects, errs: map[string]error{}}
	s.Objects = r.puts
	go func() {
		sum, _ := s.Run(context.Background())
		r.done <- sum
	}()
	<-entered
	// The frozen run's connection dies (its membership with it) and its
	// lease runs out.
	broker.DropConnections()
	time.Sleep(cfg.Plugin.LeaseDuration + 200*time.Millisecond)
	return r
}

// thaw lets the stale run go on, waits for its first upload attempt and
// its end, and returns its summary.
func (r *staleRun) thaw() *drain.Summary {
	close(r.frozen)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r.puts.mu.Lock()
		n := len(r.puts.errs)
		r.puts.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
	}
	close(r.renewals)
	return <-r.done
}

// TestStaleWriterIsFenced: a run records an intent for offsets 0..59 and
// stalls mid-upload past its lease. Retention deletes 0..29 and a second
// run takes over: it cannot re-render the intent, so it fences the key off
// and writes 30..99 anew. When the first run thaws and uploads, its object
// must not land: every offset stays in exactly one object or gap marker.
func TestStaleWriterIsFenced(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		w.produce("stale", 1, 100, 100)
		set := w.settings("stale", "stale")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "60"
		cfg := w.config(set)
		stale := w.startStale(broker, cfg)
		if err := broker.DeleteBelow(w.stream, "stale", 0, 30); err != nil {
			t.Fatal(err)
		}
		fresh := w.sink(cfg, app.Options{})
		w.drainUntilQuiet(fresh, "stale", 10)
		sum, puts := stale.thaw(), stale.puts
		if sum.Partitions[0].Objects != 0 || sum.Partitions[0].Error == "" {
			t.Fatalf("the stale run recorded %d objects (error %q); it must lose its lease", sum.Partitions[0].Objects, sum.Partitions[0].Error)
		}
		// The key of 0..59 is fenced: it still holds the empty object the
		// second run put there, whatever the stale run sent.
		voided := w.voidedKeys(fresh, "archive/")
		if len(voided) != 1 || !strings.HasSuffix(voided[0], "00000-00000000000000000000-00000000000000000059.jsonl") {
			t.Fatalf("voided keys %v, want the stale intent's", voided)
		}
		if body, err := fresh.Objects.Get(context.Background(), voided[0]); err != nil || len(body) != 0 {
			t.Fatalf("the fenced key %s holds %d bytes (%v); the stale object landed", voided[0], len(body), err)
		}
		if err := puts.errs[voided[0]]; !fencedOut(w, err) {
			t.Fatalf("the stale run's upload of %s returned %v, want a conflict with the fence", voided[0], err)
		}
		data := w.objects(fresh, "archive/")
		seen := map[uint64]int{}
		for _, o := range data {
			for _, r := range decode(t, "json_lines", o) {
				seen[r.Offset]++
			}
		}
		for off := uint64(30); off < 100; off++ {
			if seen[off] != 1 {
				t.Fatalf("offset %d is in %d objects", off, seen[off])
			}
		}
		reports := w.auditClean(fresh)
		if reports[0].Voided != 1 || reports[0].GapMarkers != 1 {
			t.Fatalf("audit: %d voided keys, %d gap markers; want 1 and 1", reports[0].Voided, reports[0].GapMarkers)
		}
	})
}

// TestRestoredStateTable: the state table is restored from a backup taken
// while an object (50..59) was unfinished, after runs had archived up to
// 99, and the rotation changed with the same deploy. Recovering the old
// intent must not store an older offset to the group (99 -> 59), and
// nothing may be archived twice.
func TestRestoredStateTable(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.produce("restore", 1, 100, 100)
		set := w.settings("restore", "restore")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "10"
		cfg := w.config(set)
		var intents atomic.Int64
		crash := func(s drain.Step, _ batch.Partition) error {
			if s == drain.StepIntent && intents.Add(1) == 6 {
				return errors.New("injected")
			}
			return nil
		}
		if _, err := w.sink(cfg, app.Options{Hooks: crashAt(crash)}).Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
			t.Fatalf("crashing run: %v", err)
		}
		backup := w.stateItem(cfg.Plugin.StateTable)
		rec := newRecordingStore(nil)
		healthy := w.sink(cfg, app.Options{})
		rec.ObjectStore = healthy.Objects
		healthy.Objects = rec
		w.drainUntilQuiet(healthy, "restore", 20)

		restored := cfg.Plugin.StateTable + "-restored"
		w.stateStore(restored)
		backup["lease_expires"] = &types.AttributeValueMemberN{Value: "0"}
		if _, err := w.dynamoClient().PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(restored), Item: backup}); err != nil {
			t.Fatal(err)
		}
		set["SINK_STATE_TABLE"] = restored
		set["SINK_MAX_MESSAGES_PER_FILE"] = "15" // and a deploy changed the rotation
		s := w.sink(w.config(set), app.Options{})
		s.Objects = rec
		for i := 0; i < 3; i++ {
			if _, err := s.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if off, ok := w.iggy.GroupOffset(w.stream, "restore", cfg.Streams[0].ConsumerGroup, 0); !ok || off != 99 {
				t.Fatalf("run %d on the restored table: group offset %d (%v), want it to stay at 99", i, off, ok)
			}
		}
		w.produce("restore", 1, 25, 100)
		w.drainUntilQuiet(s, "restore", 10)
		w.checkExactlyOnce(s, "restore", "json_lines")
		w.auditClean(s)
		if c := rec.conflicting(); len(c) > 0 {
			t.Fatalf("keys written with different contents: %v", c)
		}
	})
}

// voidedKeys lists the keys void markers name under prefix.
func (w *world) voidedKeys(s *app.Sink, prefix string) []string {
	w.t.Helper()
	var out []string
	for _, key := range w.listKeys(s, prefix) {
		if k, ok := keys.Voided(key); ok {
			out = append(out, k)
		}
	}
	return out
}

// isGenerationMarker reports the keys of generation markers, which every
// partition has beside its objects.
func isGenerationMarker(key string) bool {
	return strings.Contains(key, "/"+keys.GenerationsFolder+"/")
}

// listKeys lists every key under prefix but the generation markers.
func (w *world) listKeys(s *app.Sink, prefix string) []string {
	w.t.Helper()
	var out []string
	err := s.Objects.List(context.Background(), prefix, func(key string, _ int64) error {
		if !isGenerationMarker(key) {
			out = append(out, key)
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// stateItem reads the one item of a state table, as a backup would hold it.
func (w *world) stateItem(table string) map[string]types.AttributeValue {
	w.t.Helper()
	out, err := w.dynamoClient().Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil || len(out.Items) != 1 {
		w.t.Fatalf("scan %s: %d items, %v", table, len(out.Items), err)
	}
	return out.Items[0]
}

// TestGapMarkersWithoutTimeTemplate: with a path template that has no time
// placeholder the audit listed "…/00000-" and so missed the gap markers
// ("…/_00000-…"): a reported gap read as a failure.
func TestGapMarkersWithoutTimeTemplate(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		for _, tpl := range []string{"{stream}/{topic}", "{stream}/{topic}/{partition}"} {
			topic := "notime-" + fmt.Sprint(len(tpl))
			w.produce(topic, 1, 50, 100)
			if err := broker.DeleteBelow(w.stream, topic, 0, 20); err != nil {
				t.Fatal(err)
			}
			set := w.settings(topic, topic)
			set["SINK_PATH_TEMPLATE"] = tpl
			s := w.sink(w.config(set), app.Options{})
			w.drainUntilQuiet(s, topic, 10)
			if r := w.auditClean(s); r[0].GapMarkers != 1 || r[0].Messages != 30 {
				t.Fatalf("%s: audit found %d gap markers and %d messages, want 1 and 30", tpl, r[0].GapMarkers, r[0].Messages)
			}
		}
	})
}

// TestRecoveredObjectSameBytes: an object built in memory and uploaded just
// before a crash is re-rendered by the next run (streamed, from Iggy) and
// met under its key: for every compression the bytes must be the same
// (zstd gave 7941 bytes in memory and 7938 re-rendered), or the fenced
// write would report a conflict.
func TestRecoveredObjectSameBytes(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		for _, comp := range []string{"none", "gzip", "zstd"} {
			topic := "rerender-" + comp
			w.produce(topic, 1, 300, 2000) // objects of several compression blocks
			set := w.settings(topic, topic)
			set["SINK_COMPRESSION"] = comp
			set["SINK_FILE_ROTATION"] = "messages"
			set["SINK_MAX_MESSAGES_PER_FILE"] = "200"
			cfg := w.config(set)
			crash := func(s drain.Step, _ batch.Partition) error {
				if s == drain.StepUploaded {
					return errors.New("injected")
				}
				return nil
			}
			if _, err := w.sink(cfg, app.Options{Hooks: crashAt(crash)}).Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
				t.Fatalf("%s: crashing run: %v", comp, err)
			}
			s := w.sink(cfg, app.Options{})
			var sum *drain.Summary
			for i := 0; i < 10; i++ {
				var err error
				if sum, err = s.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				if sum.Partitions[0].Skipped == "" {
					break
				}
				time.Sleep(200 * time.Millisecond) // the crashed run's lease
			}
			p := sum.Partitions[0]
			if !p.Recovered || p.Existing != 1 || p.Conflicts != 0 {
				t.Fatalf("%s: recovered %v, existing %d, conflicts %d; want the re-rendered object to match the stored one", comp, p.Recovered, p.Existing, p.Conflicts)
			}
		}
	})
}

// TestOneStateWritePerObject: in steady state one conditional write closes
// an object and opens the next (it took two: "written N", "intent N+1").
func TestOneStateWritePerObject(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		proxy := newDynamoProxy(t, w.dynamoEndpoint(), 0)
		w.dynamoURL = proxy.url
		w.produce("writes", 1, 400, 100)
		set := w.settings("writes", "writes")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "10"
		s := w.sink(w.config(set), app.Options{})
		before := proxy.writes()
		sum, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		writes := proxy.writes() - before
		// Per run: acquire, record the incarnation, the first intent, one
		// write per object, release.
		if sum.Objects != 40 || writes > int(sum.Objects)+4 {
			t.Fatalf("%d state writes for %d objects, want at most one per object plus 4", writes, sum.Objects)
		}
		t.Logf("%d state writes for %d objects (%.2f per object)", writes, sum.Objects, float64(writes)/float64(sum.Objects))
	})
}

// TestAmbiguousStateWrite: a state write applies but every reply is lost
// (the client gives up with an error). The run must read the item back and
// go on with the right version, so that it releases its lease and the next
// run proceeds at once instead of waiting out the lease.
func TestAmbiguousStateWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		proxy := newDynamoProxy(t, w.dynamoEndpoint(), 0)
		w.dynamoURL = proxy.url
		w.produce("ambiguous", 1, 100, 100)
		set := w.settings("ambiguous", "ambiguous")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "20"
		set["SINK_LEASE_DURATION"] = "1m"
		cfg := w.config(set)
		var arm sync.Once
		hook := stepFunc(func(s drain.Step, _ batch.Partition) error {
			if s == drain.StepUploaded {
				arm.Do(proxy.loseNext)
			}
			return nil
		})
		if _, err := w.sink(cfg, app.Options{Hooks: []drain.Hook{hook}}).Run(context.Background()); err != nil {
			t.Fatalf("run with a lost state reply: %v", err)
		}
		sum, err := w.sink(cfg, app.Options{}).Run(context.Background())
		if err != nil || sum.Partitions[0].Skipped != "" {
			t.Fatalf("next run: %v, skipped %q; the lease must have been released", err, sum.Partitions[0].Skipped)
		}
		w.checkExactlyOnce(w.sink(cfg, app.Options{}), "ambiguous", "json_lines")
	})
}

// TestHeldPartitionReportsNoLag: a run that finds a partition leased by
// another (here a crashed) run reports it held, with no lag of its own and
// no EMF line for it: it read no committed offset, so its figure would be
// the whole partition (it was newest+1). An empty partition is skipped but
// not held: its lag, 0, is known.
func TestHeldPartitionReportsNoLag(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.produce("held", 1, 50, 100)
		w.produce("held-empty", 1, 0, 0)
		set := w.settings("held", "held")
		set["SINK_LEASE_DURATION"] = "1m"
		cfg := w.config(set)
		crash := crashAt(func(s drain.Step, _ batch.Partition) error {
			if s == drain.StepIntent {
				return errors.New("injected")
			}
			return nil
		})
		if _, err := w.sink(cfg, app.Options{Hooks: crash}).Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
			t.Fatalf("crashing run: %v", err)
		}
		var emf bytes.Buffer
		sum, err := w.sink(cfg, app.Options{Hooks: []drain.Hook{&metrics.EMF{W: &emf, Function: "test"}}}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := sum.Partitions[0]
		if !strings.HasPrefix(p.Skipped, "leased by another run") || !p.Held || p.Lag != 0 {
			t.Fatalf("skipped %q, held %v, lag %d; want leased by another run, held, lag 0", p.Skipped, p.Held, p.Lag)
		}
		if lines := bytes.Count(bytes.TrimSpace(emf.Bytes()), []byte("\n")) + 1; lines != 1 {
			t.Fatalf("%d EMF lines, want only the run's:\n%s", lines, emf.String())
		}
		empty, err := w.sink(w.config(w.settings("held-empty", "held-empty")), app.Options{}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if e := empty.Partitions[0]; e.Skipped != "partition is empty" || e.Held || e.Lag != 0 {
			t.Fatalf("empty partition: skipped %q, held %v, lag %d; want empty, not held, lag 0", e.Skipped, e.Held, e.Lag)
		}
	})
}

// TestRetiredGapIntentKeepsItsKey: a run writes the gap marker of offsets
// that retention deleted and dies before the state records it; the topic
// is then deleted and re-created. Retiring the old incarnation must finish
// that marker under its own key, not report the same offsets again under
// another one (the model found two gap markers for 0..2, seed 52).
func TestRetiredGapIntentKeepsItsKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		w.produce("regap", 1, 30, 100)
		if err := broker.DeleteBelow(w.stream, "regap", 0, 10); err != nil {
			t.Fatal(err)
		}
		cfg := w.config(w.settings("regap", "regap"))
		var crashed atomic.Bool
		crash := func(s drain.Step, _ batch.Partition) error {
			if s == drain.StepUploaded && crashed.CompareAndSwap(false, true) {
				return errors.New("injected")
			}
			return nil
		}
		s := w.sink(cfg, app.Options{Hooks: crashAt(crash)})
		if _, err := s.Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
			t.Fatalf("crashing run returned %v, want ErrCrash", err)
		}
		before := w.listKeys(s, "archive/")
		if len(before) != 1 || !strings.HasSuffix(before[0], ".gap") {
			t.Fatalf("the crashed run left %q, want its gap marker alone", before)
		}

		w.deleteTopic("regap")
		w.produce("regap", 1, 20, 100)
		healthy := w.sink(cfg, app.Options{})
		w.drainUntilQuiet(healthy, "regap", 20)

		var gaps []string
		for _, key := range w.listKeys(healthy, "archive/") {
			if n, ok := keys.ParseName(key); ok && n.Generation == 0 && strings.HasSuffix(key, ".gap") {
				gaps = append(gaps, key)
			}
		}
		if len(gaps) != 1 || gaps[0] != before[0] {
			t.Fatalf("generation 0's gap markers: %q, want %s alone", gaps, before[0])
		}
		w.checkGeneration(w.objects(healthy, "archive/"), 1, w.sent("regap"), "regap", "json_lines")
		w.auditClean(healthy)
	})
}

// TestIdlePartitionCostsNoWrite: once a process has drained a partition,
// a tick that finds nothing past its archived position leaves it without a
// state write (no lease taken), and still reports its committed offset; a
// partition that has new messages is drained as before, and a new process
// takes the lease once before it trusts the markers it has not seen.
func TestIdlePartitionCostsNoWrite(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		proxy := newDynamoProxy(t, w.dynamoEndpoint(), 0)
		w.dynamoURL = proxy.url
		w.produce("idle", 4, 30, 100)
		set := w.settings("idle", "idle")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "10"
		cfg := w.config(set)
		s := w.sink(cfg, app.Options{})
		w.drainUntilQuiet(s, "idle", 10)
		tick := func(s *app.Sink) (*drain.Summary, int) {
			t.Helper()
			before := proxy.writes()
			sum, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return sum, proxy.writes() - before
		}
		sum, writes := tick(s)
		if writes != 0 || sum.Leases != 0 {
			t.Fatalf("an idle tick made %d state writes and took %d leases; want none", writes, sum.Leases)
		}
		for _, p := range sum.Partitions {
			if !p.Idle || p.Committed == nil || *p.Committed != 29 || p.Lag != 0 {
				t.Fatalf("partition %d: idle %v committed %v lag %d; want idle at offset 29", p.Partition, p.Idle, p.Committed, p.Lag)
			}
		}

		w.appendRaw("idle", 1, jsonPayload(1, 30, 100), producedHeaders(30))
		sum, writes = tick(s)
		busy := 0
		for _, p := range sum.Partitions {
			if !p.Idle {
				busy++
			}
		}
		if busy != 1 || sum.Objects != 1 || sum.Leases != 1 || writes == 0 {
			t.Fatalf("%d partitions not idle, %d objects, %d leases, %d writes: want one partition's lease taken and its message archived", busy, sum.Objects, sum.Leases, writes)
		}

		fresh := w.sink(cfg, app.Options{})
		if sum, _ = tick(fresh); sum.Leases != 4 {
			t.Fatalf("a new process's first tick took %d leases; want all 4 (it has seen no marker yet)", sum.Leases)
		}
		if sum, writes = tick(fresh); writes != 0 {
			t.Fatalf("its second tick made %d state writes; want none", writes)
		}
		w.checkExactlyOnce(s, "idle", "json_lines")
		w.auditClean(s)
	})
}

package drain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/faultproxy"
)

// archivedTopic produces n messages into a one-partition topic named
// after name, and drains them with objects of 25 messages.
func (w *world) archivedTopic(name string, n int) (string, *config.Config, *app.Sink) {
	w.t.Helper()
	topic := uniqueName(name)
	w.produce(topic, 1, n, 120)
	set := w.settings(name, topic)
	set["SINK_FILE_ROTATION"] = "messages"
	set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
	cfg := w.config(set)
	s := w.sink(cfg, app.Options{})
	w.drainUntilQuiet(s, topic, 10)
	return topic, cfg, s
}

// objectsOf keeps the objects whose folder is topic's under a template
// that names the topic as a whole path part.
func objectsOf(all []object, topic string) []object {
	var out []object
	for _, o := range all {
		if strings.Contains(o.key, "/"+topic+"/") {
			out = append(out, o)
		}
	}
	return out
}

// Time-first templates list every topic under one prefix (issue 21, item
// 1): a topic added to the configuration later must not adopt another
// topic's objects as its own (it would archive none of its messages, with
// the group committed and the audit clean), and the audit must not read
// two topics' objects as one partition's overlaps.
func TestTimeFirstTemplateKeepsTopicsApart(t *testing.T) {
	for _, tpl := range []string{"dt={date}/{stream}/{topic}", "{stream}/{date}/{topic}"} {
		t.Run(strings.NewReplacer("/", "_", "{", "", "}", "").Replace(tpl), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, w *world) {
				first, later := uniqueName("orders"), uniqueName("payments")
				w.produce(first, 2, 40, 100)
				set := w.settings("timefirst", first)
				set["SINK_PATH_TEMPLATE"] = tpl
				set["SINK_FILE_ROTATION"] = "messages"
				set["SINK_MAX_MESSAGES_PER_FILE"] = "15"
				w.drainUntilQuiet(w.sink(w.config(set), app.Options{}), first, 10)

				w.produce(later, 2, 40, 100)
				set["SINK_TOPICS"] = first + "," + later
				s := w.sink(w.config(set), app.Options{})
				w.drainUntilQuiet(s, later, 10)
				all := w.objects(s, "archive/")
				w.checkGeneration(objectsOf(all, first), 0, w.sent(first), first, "json_lines")
				w.checkGeneration(objectsOf(all, later), 0, w.sent(later), later, "json_lines")
				reports := w.auditClean(s)
				if len(reports) != 4 {
					t.Fatalf("%d audit reports, want one per partition of the two topics", len(reports))
				}
				for _, r := range reports {
					if r.Objects != 3 || r.Messages != 40 {
						t.Fatalf("audit of %s/%d: %d objects, %d messages; want 3 and 40 (40 messages in objects of 15)", r.Topic, r.Partition, r.Objects, r.Messages)
					}
				}
			})
		})
	}
}

// A state row that recorded no incarnation (written before identities were
// kept, or restored from an old backup) still has its partition's
// re-creation noticed (issue 21, item 7): the new topic is archived from
// offset 0 as a new generation instead of inheriting the old position.
func TestStateWithoutIncarnationSeesRecreation(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.hooks(t) // a quick broker-side delete, as TestTopicRecreated
		topic, cfg, s := w.archivedTopic("noinc", 100)
		old := w.sent(topic)

		item := w.stateItem(cfg.Plugin.StateTable)
		if _, ok := item["incarnation"]; !ok {
			t.Fatal("the state item has no incarnation attribute to remove")
		}
		delete(item, "incarnation")
		if _, err := w.dynamoClient().PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(cfg.Plugin.StateTable), Item: item}); err != nil {
			t.Fatal(err)
		}
		w.deleteTopic(topic)
		w.produce(topic, 1, 150, 120) // longer than the old position
		w.drainUntilQuiet(s, topic, 10)

		all := w.objects(s, "archive/")
		w.checkGeneration(all, 0, old, topic, "json_lines")
		w.checkGeneration(all, 1, w.sent(topic), topic, "json_lines")
		w.auditClean(s)
	})
}

// A run that dies between a multipart upload's parts and its completion
// leaves the upload open, its parts kept and billed (issue 21, item 13):
// here the completion and every abort fail, as if the run were killed. The
// run that recovers the object aborts what was left, writes the object,
// and no upload stays open.
func TestRecoveryAbortsADeadRunsUpload(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := uniqueName("orphan")
		w.produce(topic, 1, 12_000, 1000) // one object of about 12 MiB: three parts of 5 MiB
		set := w.settings("orphan", topic)
		set["SINK_MULTIPART_THRESHOLD"] = "5MiB"
		set["SINK_PART_SIZE"] = "5MiB"
		set["SINK_MAX_ATTEMPTS"] = "1"
		dying := func(r *http.Request) bool {
			q := r.URL.Query()
			return q.Has("uploadId") && (r.Method == http.MethodPost || r.Method == http.MethodDelete)
		}
		proxy, err := faultproxy.Start(w.s3.Endpoint, faultproxy.Config{Forbid: true, Only: dying})
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		set["SINK_ENDPOINT"] = proxy.URL()
		if _, err := w.sink(w.config(set), app.Options{}).Run(context.Background()); err == nil {
			t.Fatal("the run whose completion failed succeeded")
		}
		if n := w.openUploads("orphan"); n == 0 {
			t.Fatal("the failed run left no multipart upload open: nothing to recover from")
		}

		set["SINK_ENDPOINT"] = w.s3.Endpoint
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, topic, 5)
		if n := w.openUploads("orphan"); n != 0 {
			t.Fatalf("%d multipart uploads still open after recovery", n)
		}
		w.checkExactlyOnce(s, topic, "json_lines")
		w.auditClean(s)
		if !strings.Contains(w.logs.String(), "aborted the multipart uploads a dead run left") {
			t.Fatal("the recovery did not say it aborted the dead run's upload")
		}
	})
}

// openUploads counts the multipart uploads open in bucket.
func (w *world) openUploads(bucket string) int {
	w.t.Helper()
	out, err := w.s3.Client(w.t).ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		w.t.Fatalf("ListMultipartUploads: %v", err)
	}
	return len(out.Uploads)
}

// An operator moves the consumer group past offsets the sink had not yet
// archived (issue 21, item 10): the sink passes them over with a skip
// marker that says why, archives what follows, and the audit accepts it
// (it failed for good before: offsets in no object and no marker).
func TestGroupMovedForwardIsMarkedSkipped(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic, cfg, s := w.archivedTopic("moved", 50)
		w.produce(topic, 1, 50, 100) // offsets 50..99

		// The operator's move: a member of the group stores offset 79.
		ctx := context.Background()
		op, err := source.Open(ctx, source.Config{Address: w.iggy.Addr(), Username: w.user, Password: w.password})
		if err != nil {
			t.Fatal(err)
		}
		tp, err := op.Topic(ctx, w.stream, topic, cfg.Streams[0].ConsumerGroup)
		if err == nil {
			err = op.Join(ctx, tp)
		}
		if err == nil {
			err = op.StoreOffset(ctx, tp, 0, 79)
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = op.Leave(ctx, tp)
		op.Close()

		w.drainUntilQuiet(s, topic, 10)
		reports := w.auditClean(s)
		if len(reports) != 1 || reports[0].Skipped != 1 || reports[0].Messages != 70 {
			t.Fatalf("audit: %+v; want 70 messages archived and one skip marker", reports)
		}
		var skips []string
		for _, k := range w.listKeys(s, "archive/") {
			if strings.HasSuffix(k, "."+keys.SkipExt) {
				skips = append(skips, k)
			}
		}
		if len(skips) != 1 || !strings.HasSuffix(skips[0], "_00000-00000000000000000050-00000000000000000079.skip") {
			t.Fatalf("skip markers %v; want one for offsets 50..79", skips)
		}
		sent := w.sent(topic)[0]
		seen := map[uint64]int{}
		for _, o := range w.objects(s, "archive/") {
			for _, r := range decode(t, "json_lines", o) {
				if string(r.Payload) != string(sent[r.Offset].payload) {
					t.Fatalf("offset %d: payload differs", r.Offset)
				}
				seen[r.Offset]++
			}
		}
		for off := uint64(0); off < 100; off++ {
			want := 1
			if off >= 50 && off <= 79 {
				want = 0
			}
			if seen[off] != want {
				t.Fatalf("offset %d is in %d objects, want %d", off, seen[off], want)
			}
		}
	})
}

// A data object in S3 has its error object beside it (issue 21, item 8):
// the first run's error object writes fail, then retention deletes most of
// the range before the next run can render it again. With the data object
// written first, the next run kept it alone and the rejected records were
// lost with a clean audit; the error object is written first now.
func TestDataObjectNeverWithoutItsErrorObject(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t) // retention: DeleteBelow
		topic := uniqueName("errfirst")
		refuseErrors := func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/_errors/")
		}
		set := w.refusedRun("errfirst", topic, refuseErrors, func() {
			if err := broker.DeleteBelow(w.stream, topic, 0, 50); err != nil {
				t.Fatal(err)
			}
		})
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, topic, 10)
		all := map[string]bool{}
		for _, k := range w.listKeys(s, "archive/") {
			all[k] = true
		}
		names := keys.NewNamer(s.Config.Plugin.Prefix, s.Config.Plugin.Template, "jsonl").WithErrors(s.Config.Plugin.ErrorsPrefix())
		checked := 0
		for _, o := range w.objects(s, "archive/"+w.stream+"/") {
			if o.stored == 0 {
				continue // a fence
			}
			rejected := 0
			for n := o.first; n <= o.last; n++ {
				if n%7 == 6 || n%21 == 20 {
					rejected++
				}
			}
			ekey, _ := names.ErrorsKey(o.key)
			if rejected > 0 && !all[ekey] {
				t.Fatalf("data object %s holds offsets of %d rejected records, but its error object %s is not there", o.key, rejected, ekey)
			}
			checked++
		}
		if checked == 0 {
			t.Fatal("no data object to check")
		}
		w.auditClean(s)
	})
}

// A stale writer whose data key was voided must not still write its error
// object (issue 21, item 9): the run that voids the key fences the error
// key too, and each rejected record is in exactly one error object.
func TestVoidedKeyFencesItsErrorObject(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		topic := uniqueName("stalerr")
		w.produceWith(topic, 1, 100, errorPayload)
		set := w.settings("stalerr", topic)
		set["SINK_INVALID_PAYLOAD"] = "error_object"
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "60"
		cfg := w.config(set)
		stale := w.startStale(broker, cfg)
		if err := broker.DeleteBelow(w.stream, topic, 0, 30); err != nil { // the stale range cannot be rendered again
			t.Fatal(err)
		}
		fresh := w.sink(cfg, app.Options{})
		w.drainUntilQuiet(fresh, topic, 10)
		stale.thaw()
		puts := stale.puts

		names := keys.NewNamer(cfg.Plugin.Prefix, cfg.Plugin.Template, "jsonl").WithErrors(cfg.Plugin.ErrorsPrefix())
		voided := w.voidedKeys(fresh, "archive/"+w.stream+"/")
		if len(voided) != 1 {
			t.Fatalf("voided keys %v, want the stale intent's", voided)
		}
		ekey, _ := names.ErrorsKey(voided[0])
		if body, err := fresh.Objects.Get(context.Background(), ekey); err != nil || len(body) != 0 {
			t.Fatalf("the voided key's error object %s holds %d bytes (%v); want the empty fence", ekey, len(body), err)
		}
		if err, ok := puts.errs[ekey]; ok && !fencedOut(w, err) {
			t.Fatalf("the stale run's error object write returned %v, want a conflict with the fence", err)
		}
		w.rejectedOnce(fresh, 30, 100)
		w.auditClean(fresh)
	})
}

// A voided key is never reused (issue 21, item 3): a run on json_lines dies
// mid-upload; a run on json_array (a deploy, or a stray poller) cannot
// render the intent in its format, voids the key, reads the range again
// and dies too; a run on json_lines again voids that one and renders the
// range to the first key — whose fence it met and took for the object, so
// offsets 0..9 were in no object, with the audit clean. The range goes
// under the key's next revision now.
func TestVoidedKeyIsNeverReused(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := uniqueName("flip")
		w.produce(topic, 1, 30, 100)
		lines, array := w.formatConfigs("flip", topic, nil)
		w.dieMidUploadOnEach(lines, array)
		s := w.sink(lines, app.Options{})
		w.drainUntilQuiet(s, topic, 10)

		voided := map[string]bool{}
		for _, k := range w.voidedKeys(s, "archive/") {
			voided[k] = true
		}
		if len(voided) != 2 {
			t.Fatalf("voided keys %v; want the json_lines and the json_array key of 0..9", voided)
		}
		seen := map[uint64]int{}
		revised := false
		for _, o := range w.objects(s, "archive/") {
			if voided[o.key] {
				continue
			}
			n, _ := keys.ParseName(o.key)
			revised = revised || n.Revision > 0
			format := "json_lines"
			if strings.HasSuffix(o.key, ".json") {
				format = "json_array"
			}
			for _, r := range decode(t, format, o) {
				seen[r.Offset]++
			}
		}
		for off := uint64(0); off < 30; off++ {
			if seen[off] != 1 {
				t.Fatalf("offset %d is in %d objects, want 1", off, seen[off])
			}
		}
		if !revised {
			t.Fatal("no object went under a revised key")
		}
		w.auditClean(s)
	})
}

// renewCounter counts lease renewals.
type renewCounter struct {
	drain.StateStore
	n atomic.Int64
}

func (r *renewCounter) Renew(ctx context.Context, s state.State, ttl time.Duration) (state.State, error) {
	r.n.Add(1)
	return r.StateStore.Renew(ctx, s, ttl)
}

// slowLister makes every listing take longer than the run has.
type slowLister struct {
	app.ObjectStore
	delay time.Duration
}

func (s *slowLister) ListAfter(ctx context.Context, prefix, startAfter string, fn func(string, int64) error) error {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.ObjectStore.ListAfter(ctx, prefix, startAfter, fn)
}

// A run that runs out of time while a new partition's adoption lists S3
// says so as an error, instead of stopping as if it had nothing to do
// (issue 21, item 4), and keeps the lease while it lists.
func TestAdoptionOutOfTimeIsAnError(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := uniqueName("slowlist")
		w.produce(topic, 1, 10, 100)
		set := w.settings("slowlist", topic)
		set["SINK_RUN_TIMEOUT"] = "1500ms"
		set["SINK_DEADLINE_MARGIN"] = "10ms"
		cfg := w.config(set)
		renews := &renewCounter{StateStore: w.stateStore(cfg.Plugin.StateTable)}
		s := w.sink(cfg, app.Options{State: renews})
		s.Objects = &slowLister{ObjectStore: s.Objects, delay: 5 * time.Second} // longer than the lease (1s) too
		sum, err := s.Run(context.Background())
		p := sum.Partitions[0]
		if err == nil && !strings.Contains(p.Error, "ran out of time listing") {
			t.Fatalf("run: %v; partition %+v; want an error saying the listing ran out of time", err, p)
		}
		if n := renews.n.Load(); n < 2 {
			t.Fatalf("the lease (1s) was renewed %d times during a 1.5s listing", n)
		}
	})
}

// keyCounter counts the keys ListAfter hands over, which is what adoption
// lists.
type keyCounter struct {
	app.ObjectStore
	n atomic.Int64
}

func (k *keyCounter) ListAfter(ctx context.Context, prefix, startAfter string, fn func(string, int64) error) error {
	return k.ObjectStore.ListAfter(ctx, prefix, startAfter, func(key string, size int64) error {
		k.n.Add(1)
		return fn(key, size)
	})
}

// Under a time-first template the listing prefix covers every topic's
// objects, and another sink's: adoption lists the folders of its own
// partition at its messages' times, from the offset it looks for, not the
// whole prefix (issue 21, item 4). A topic added later lists next to
// nothing; a new state table of an archived topic lists that topic's
// objects, and adopts them exactly.
func TestTimeFirstAdoptionListsItsOwnFolders(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		const decoys = 600
		first, later := uniqueName("orders"), uniqueName("payments")
		w.produce(first, 2, 40, 100)
		set := w.settings("ownfolders", first)
		set["SINK_PATH_TEMPLATE"] = "dt={date}/{stream}/{topic}"
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "15"
		w.drainUntilQuiet(w.sink(w.config(set), app.Options{}), first, 10)

		// Another sink's topic under the same prefix, in today's folder.
		tpl, err := keys.ParseTemplate(set["SINK_PATH_TEMPLATE"])
		if err != nil {
			t.Fatal(err)
		}
		other := keys.NewNamer("archive", tpl, "jsonl")
		s := w.sink(w.config(set), app.Options{})
		now := uint64(time.Now().UnixMicro())
		work := make(chan int)
		errs := make(chan error, 8)
		for g := 0; g < 8; g++ {
			go func() {
				var err error
				for i := range work {
					key := other.Partition(w.stream, "decoy", uint32(i%2)).Object(uint64(i)*10, uint64(i)*10+9, now)
					if err == nil {
						_, err = s.Objects.Put(context.Background(), s3store.Object{Key: key}, []byte("{}\n"))
					}
				}
				errs <- err
			}()
		}
		for i := 0; i < decoys; i++ {
			work <- i
		}
		close(work)
		for g := 0; g < 8; g++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if n := len(w.listKeys(s, "archive/dt=")); n < decoys+6 {
			t.Fatalf("the prefix holds %d keys, want the %d decoys and the topic's 6 objects", n, decoys)
		}

		w.produce(later, 2, 40, 100)
		set["SINK_TOPICS"] = first + "," + later
		both := w.sink(w.config(set), app.Options{})
		counted := &keyCounter{ObjectStore: both.Objects}
		both.Objects = counted
		w.drainUntilQuiet(both, later, 10)
		t.Logf("adoption of the added topic listed %d keys", counted.n.Load())
		if n := counted.n.Load(); n > 20 {
			t.Errorf("adoption of the added topic listed %d keys; want its own folders' (none), not the prefix's %d", n, decoys+6)
		}

		set["SINK_STATE_TABLE"] += "-new"
		w.stateStore(set["SINK_STATE_TABLE"])
		fresh := w.sink(w.config(set), app.Options{})
		counted = &keyCounter{ObjectStore: fresh.Objects}
		fresh.Objects = counted
		sum, err := fresh.Run(context.Background())
		if err != nil || sum.Objects != 0 {
			t.Fatalf("run on the new table: %d objects, %v; want none written (everything adopted)", sum.Objects, err)
		}
		t.Logf("adoption on a new table listed %d keys", counted.n.Load())
		if n := counted.n.Load(); n > 30 {
			t.Errorf("adoption on a new table listed %d keys; want about the two topics' 12 objects, not the prefix's %d", n, decoys+12)
		}
		all := w.objects(fresh, "archive/")
		w.checkGeneration(objectsOf(all, first), 0, w.sent(first), first, "json_lines")
		w.checkGeneration(objectsOf(all, later), 0, w.sent(later), later, "json_lines")
		for _, r := range w.auditClean(fresh) {
			if r.Topic != "decoy" && (r.Objects != 3 || r.Messages != 40) {
				t.Fatalf("audit of %s/%d: %d objects, %d messages; want 3 and 40", r.Topic, r.Partition, r.Objects, r.Messages)
			}
		}
	})
}

// A new state table, the group at the end, and a hole in what S3 holds (a
// lifecycle rule expired the oldest object): the skip marker covers the
// hole only, and the objects after it are adopted, not covered twice.
func TestSkipMarkerStopsAtTheNextObject(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic, cfg, s := w.archivedTopic("expired", 100)
		first := ""
		for _, k := range w.listKeys(s, "archive/") {
			if strings.HasSuffix(k, "00000-00000000000000000000-00000000000000000024.jsonl") {
				first = k
			}
		}
		if first == "" {
			t.Fatal("no object 0..24")
		}
		if _, err := w.s3.Client(t).DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("expired"), Key: aws.String(first)}); err != nil {
			t.Fatal(err)
		}
		set := w.settings("expired", topic)
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
		set["SINK_STATE_TABLE"] = cfg.Plugin.StateTable + "-new"
		fresh := w.sink(w.config(set), app.Options{})
		sum, err := fresh.Run(context.Background())
		if err != nil || sum.Objects != 0 {
			t.Fatalf("run on the new table: %d objects, %v; want none written", sum.Objects, err)
		}
		reports := w.auditClean(fresh)
		if reports[0].Skipped != 1 || reports[0].Objects != 3 || reports[0].Messages != 75 {
			t.Fatalf("audit %+v; want the skip marker of 0..24 and the three objects of 25..99", reports[0])
		}
	})
}

// Every record of a range rejected (its data object is the empty object of
// its format), with the range voided and read again across format changes:
// the range still lands in exactly one live object, and each rejected
// record in exactly one error object whose data key is live.
func TestVoidedKeyWithRejectedRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := uniqueName("flipbad")
		w.produceWith(topic, 1, 30, func(p, n int) []byte {
			if n < 10 {
				return []byte("not json") // the first object: every record rejected
			}
			return errorPayload(p, n)
		})
		lines, array := w.formatConfigs("flipbad", topic, map[string]string{"SINK_INVALID_PAYLOAD": "error_object"})
		w.dieMidUploadOnEach(lines, array)
		s := w.sink(lines, app.Options{})
		w.drainUntilQuiet(s, topic, 10)
		w.auditClean(s)
		seen := w.errorRecords(s)
		for n := uint64(0); n < 30; n++ {
			want := 0
			if n < 10 || n%7 == 6 || n%21 == 20 {
				want = 1
			}
			if seen[n] != want {
				t.Fatalf("rejected record %d is in %d error objects, want %d", n, seen[n], want)
			}
		}
	})
}

// formatConfigs is topic's configuration on json_lines and on json_array,
// objects of 10 messages, with extra settings.
func (w *world) formatConfigs(bucket, topic string, extra map[string]string) (lines, array *config.Config) {
	w.t.Helper()
	configFor := func(format string) *config.Config {
		set := w.settings(bucket, topic)
		set["SINK_OUTPUT_FORMAT"] = format
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "10"
		for k, v := range extra {
			set[k] = v
		}
		return w.config(set)
	}
	return configFor("json_lines"), configFor("json_array")
}

// dieMidUploadOnEach runs a sink of each configuration in turn that dies in
// the middle of its first upload, and waits for its lease to lapse.
func (w *world) dieMidUploadOnEach(cfgs ...*config.Config) {
	w.t.Helper()
	for _, cfg := range cfgs {
		var fired atomic.Bool
		crashing := w.sink(cfg, app.Options{Hooks: crashAt(func(s drain.Step, _ batch.Partition) error {
			if s == drain.StepMidUpload && fired.CompareAndSwap(false, true) {
				return errors.New("injected")
			}
			return nil
		})})
		if _, err := crashing.Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
			w.t.Fatalf("crashing run on %s: %v", cfg.Plugin.OutputFormat, err)
		}
		time.Sleep(cfg.Plugin.LeaseDuration + 100*time.Millisecond)
	}
}

// rejectedOnce fails unless each offset in from..to-1 that errorPayload
// makes not JSON is in exactly one error object, and no other is.
func (w *world) rejectedOnce(s *app.Sink, from, to uint64) {
	w.t.Helper()
	seen := w.errorRecords(s)
	for n := from; n < to; n++ {
		want := 0
		if n%7 == 6 || n%21 == 20 {
			want = 1
		}
		if seen[n] != want {
			w.t.Fatalf("rejected record %d is in %d error objects, want %d", n, seen[n], want)
		}
	}
}

// errorRecords counts, per offset, the records in every error object.
func (w *world) errorRecords(s *app.Sink) map[uint64]int {
	w.t.Helper()
	seen := map[uint64]int{}
	for _, k := range w.listKeys(s, "archive/_errors/") {
		body, err := s.Objects.Get(context.Background(), k)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var rec struct{ Offset uint64 }
			if err := json.Unmarshal(line, &rec); err != nil {
				w.t.Fatalf("%s: %v", k, err)
			}
			seen[rec.Offset]++
		}
	}
	return seen
}

// An error object goes before its data object, so a run that dies in
// between leaves it alone; when the range cannot be rendered again (here
// the format changed), its data key is voided and the range read again
// into new objects, with their own error objects. The orphan then held
// every rejected record of the range a second time, and the audit failed
// for good (the model test, seed 30): it is deleted and fenced instead.
func TestOrphanedErrorObjectRemoved(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := uniqueName("orphanerr")
		refuseData := func(r *http.Request) bool {
			return r.Method == http.MethodPut && !strings.Contains(r.URL.Path, "/_errors/") && !strings.Contains(r.URL.Path, "/_generations/")
		}
		set := w.refusedRun("orphanerr", topic, refuseData, func() {})
		orphans := w.listKeys(w.sink(w.config(set), app.Options{}), "archive/_errors/")
		if len(orphans) != 1 {
			t.Fatalf("error objects after the refused run: %q, want the first object's", orphans)
		}
		set["SINK_OUTPUT_FORMAT"] = "json_array" // the unfinished object cannot be rendered again
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, topic, 10)
		if body, err := s.Objects.Get(context.Background(), orphans[0]); err != nil || len(body) != 0 {
			t.Fatalf("the orphaned error object %s holds %d bytes (%v); want the empty fence", orphans[0], len(body), err)
		}
		w.rejectedOnce(s, 0, 60)
		w.auditClean(s)
	})
}

// refusedRun produces 60 messages of errorPayload into topic and runs a
// sink (error objects, objects of 40 messages, one attempt per request)
// whose S3 requests that refuse matches are forbidden; the run must fail.
// After then (retention, say) it waits for the run's lease to lapse, and
// returns the settings, pointed at S3 again.
func (w *world) refusedRun(bucket, topic string, refuse func(*http.Request) bool, then func()) map[string]string {
	w.t.Helper()
	w.produceWith(topic, 1, 60, errorPayload)
	set := w.settings(bucket, topic)
	set["SINK_INVALID_PAYLOAD"] = "error_object"
	set["SINK_FILE_ROTATION"] = "messages"
	set["SINK_MAX_MESSAGES_PER_FILE"] = "40"
	set["SINK_MAX_ATTEMPTS"] = "1"
	proxy, err := faultproxy.Start(w.s3.Endpoint, faultproxy.Config{Forbid: true, Only: refuse})
	if err != nil {
		w.t.Fatal(err)
	}
	defer proxy.Close()
	set["SINK_ENDPOINT"] = proxy.URL()
	if _, err := w.sink(w.config(set), app.Options{}).Run(context.Background()); err == nil {
		w.t.Fatal("the run whose requests were refused succeeded")
	}
	then()
	time.Sleep(1100 * time.Millisecond) // the failed run's lease lapses
	set["SINK_ENDPOINT"] = w.s3.Endpoint
	return set
}

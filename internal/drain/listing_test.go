package drain_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/faultproxy"
)

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
		topic := uniqueName("noinc")
		w.produce(topic, 1, 100, 120)
		set := w.settings("noinc", topic)
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
		cfg := w.config(set)
		s := w.sink(cfg, app.Options{})
		w.drainUntilQuiet(s, topic, 10)
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
		topic := uniqueName("moved")
		w.produce(topic, 1, 50, 100)
		set := w.settings("moved", topic)
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
		cfg := w.config(set)
		s := w.sink(cfg, app.Options{})
		w.drainUntilQuiet(s, topic, 10)
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

package drain_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
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

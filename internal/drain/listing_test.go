package drain_test

import (
	"strings"
	"testing"

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

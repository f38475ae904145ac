package drain_test

import (
	"context"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
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
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
		set["SINK_STATE_TABLE"] = cfg.Plugin.StateTable + "-new"
		w.stateStore(set["SINK_STATE_TABLE"])
		fresh := w.sink(w.config(set), app.Options{})
		w.produce(topic, 1, 50, 120)
		sum, err := fresh.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if p := sum.Partitions[0]; p.Generation != 1 {
			t.Fatalf("the fresh state item archives generation %d, want 1 (the live incarnation's)", p.Generation)
		}
		w.drainUntilQuiet(fresh, topic, 10)

		all := w.objects(fresh, "archive/")
		w.checkGeneration(all, 0, old, topic, "json_lines")
		w.checkGeneration(all, 1, w.sent(topic), topic, "json_lines")
		w.auditClean(fresh)
	})
}

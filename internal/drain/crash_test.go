package drain_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
)

// TestCrashAtEveryStep aborts a run at every step of writing an object, as
// a dying process would (no lease release, no group leave), for several
// seeds that pick which object the crash hits and whether objects are built
// in memory or streamed, as JSON Lines or Parquet. The next runs must
// finish the work with every message exactly once and a clean audit.
func TestCrashAtEveryStep(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		variants := []struct {
			seed   int
			format string
		}{{1, "json_lines"}, {2, "json_lines"}, {5, "json_lines"}, {3, "parquet"}, {4, "parquet"}}
		for _, step := range drain.Steps {
			for _, v := range variants {
				seed, format := v.seed, v.format
				name := fmt.Sprintf("%s/%s-seed-%d", step, format, seed)
				t.Run(name, func(t *testing.T) {
					t.Parallel() // mostly waiting for the crashed run's lease
					w := w.with(t)
					id := strings.NewReplacer("after-", "a", "before-", "b", "offset-", "o", "state-", "s", "-", "").Replace(string(step))
					topic := fmt.Sprintf("crash-%s-%d", id, seed)
					w.produce(topic, 2, 120, 150)
					set := w.settings(fmt.Sprintf("crash-%s-%d", id, seed), topic)
					set["SINK_FILE_ROTATION"] = "messages"
					set["SINK_MAX_MESSAGES_PER_FILE"] = "25"
					set["SINK_BATCH_LENGTH"] = "40"
					set["SINK_OUTPUT_FORMAT"] = format
					// Parquet on a real S3 also goes into an Iceberg table.
					iceberg := format == "parquet" && w.withIceberg(set)
					cfg := w.config(set)

					crash := crashAtNth(step, seed)
					opts := app.Options{Hooks: crashAt(crash.hook)}
					if seed%2 == 0 {
						opts.KeepLimit = 1024 // objects are re-read and streamed
					}
					crashing := w.sink(cfg, opts)
					_, err := crashing.Run(context.Background())
					if !crash.crashed.Load() {
						t.Fatalf("the hook never fired at %s (hits %d); the run returned %v", step, crash.hits.Load(), err)
					}
					if !errors.Is(err, drain.ErrCrash) {
						t.Fatalf("crashed run returned %v, want ErrCrash", err)
					}
					healthy := w.sink(cfg, app.Options{KeepLimit: opts.KeepLimit})
					w.drainUntilQuiet(healthy, topic, 20)
					if format == "parquet" {
						w.checkParquet(healthy, parquetCheck{topic: topic, prefix: "archive/", types: producedTypes})
						if iceberg {
							w.checkIceberg(healthy, topic)
						}
					} else {
						w.checkExactlyOnce(healthy, topic, format)
					}
					w.auditClean(healthy)
				})
			}
		}
	})
}

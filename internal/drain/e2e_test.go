package drain_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
)

// TestEndToEnd drains 10,000 messages with headers over 4 partitions in
// every output format (and compressed) and decodes the objects back.
func TestEndToEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		cases := []struct {
			name, format, compression, ext string
		}{
			{"json_lines", "json_lines", "none", ".jsonl"},
			{"json_array", "json_array", "none", ".json"},
			{"raw", "raw", "none", ".bin"},
			{"json_lines_gzip", "json_lines", "gzip", ".jsonl.gz"},
			{"json_array_zstd", "json_array", "zstd", ".json.zst"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				w := w.with(t)
				topic := "e2e-" + strings.ReplaceAll(tc.name, "_", "-")
				w.produce(topic, 4, 2500, 200)
				set := w.settings(strings.ReplaceAll("b-"+tc.name, "_", "-"), topic)
				set["SINK_OUTPUT_FORMAT"] = tc.format
				set["SINK_COMPRESSION"] = tc.compression
				set["SINK_MAX_FILE_SIZE"] = "128KiB"
				s := w.sink(w.config(set), app.Options{})
				w.drainUntilQuiet(s, topic, 10)
				objs := w.checkExactlyOnce(s, topic, tc.format)
				keyRE := regexp.MustCompile(`^archive/` + w.stream + `/` + topic + `/\d{4}-\d{2}-\d{2}/\d{2}/0000[0-3]-\d{20}-\d{20}` + regexp.QuoteMeta(tc.ext) + `$`)
				for _, o := range objs {
					if !keyRE.MatchString(o.key) {
						t.Fatalf("key %q does not match the template", o.key)
					}
				}
				if len(objs) < 8 {
					t.Fatalf("%d objects; 128 KiB rotation over ~500 KiB per partition should give several per partition", len(objs))
				}
				w.auditClean(s)
			})
		}
	})
}

// TestRotation checks where objects end for each rotation rule.
func TestRotation(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {

		t.Run("size", func(t *testing.T) {
			w := w.with(t)
			w.produce("rot-size", 1, 300, 300)
			set := w.settings("rot-size", "rot-size")
			set["SINK_MAX_FILE_SIZE"] = "10KB"
			s := w.sink(w.config(set), app.Options{})
			w.drainUntilQuiet(s, "rot-size", 10)
			objs := w.checkExactlyOnce(s, "rot-size", "json_lines")
			for i, o := range objs {
				if len(o.body) > 10000 {
					t.Fatalf("%s: %d bytes, over max_file_size 10KB", o.key, len(o.body))
				}
				// Every object but the last is full: the next record would not fit.
				if i < len(objs)-1 {
					nextLen := len(decodeFirstLine(t, objs[i+1]))
					if len(o.body)+nextLen <= 10000 {
						t.Fatalf("%s: %d bytes, and the next record (%d bytes) would still fit", o.key, len(o.body), nextLen)
					}
				}
			}
		})

		t.Run("messages", func(t *testing.T) {
			w := w.with(t)
			w.produce("rot-count", 2, 250, 100)
			set := w.settings("rot-count", "rot-count")
			set["SINK_FILE_ROTATION"] = "messages"
			set["SINK_MAX_MESSAGES_PER_FILE"] = "100"
			set["SINK_MAX_FILE_AGE"] = "1h"
			s := w.sink(w.config(set), app.Options{})
			sum, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// 250 per partition: two full objects each, 50 left for later (not yet due).
			if sum.Objects != 4 || sum.Messages != 400 {
				t.Fatalf("first run wrote %d objects / %d messages, want 4 / 400", sum.Objects, sum.Messages)
			}
			for _, p := range sum.Partitions {
				if p.Pending != 50 || p.Lag != 50 {
					t.Fatalf("partition %d: pending %d lag %d, want 50 and 50", p.Partition, p.Pending, p.Lag)
				}
			}
			for _, o := range w.objects(s, "archive/") {
				if o.last-o.first+1 != 100 {
					t.Fatalf("%s: %d messages, want 100", o.key, o.last-o.first+1)
				}
			}
		})

		t.Run("age", func(t *testing.T) {
			w := w.with(t)
			w.produce("rot-age", 1, 30, 100)
			set := w.settings("rot-age", "rot-age")
			set["SINK_MAX_FILE_AGE"] = "1h"
			s := w.sink(w.config(set), app.Options{})
			sum, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sum.Objects != 0 || sum.Partitions[0].Pending != 30 {
				t.Fatalf("young partial batch: wrote %d objects, pending %d; want 0 and 30", sum.Objects, sum.Partitions[0].Pending)
			}
			// Two hours later the same batch is due.
			r := s.Runner()
			r.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
			sum, err = r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sum.Objects != 1 || sum.Messages != 30 {
				t.Fatalf("due batch: wrote %d objects / %d messages, want 1 / 30", sum.Objects, sum.Messages)
			}
			w.checkExactlyOnce(s, "rot-age", "json_lines")
			w.auditClean(s)
		})
	})
}

func decodeFirstLine(t *testing.T, o object) []byte {
	t.Helper()
	i := strings.IndexByte(string(o.body), '\n')
	if i < 0 {
		t.Fatalf("%s: no newline", o.key)
	}
	return o.body[:i+1]
}

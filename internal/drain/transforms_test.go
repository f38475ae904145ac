package drain_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// TestTransformsEndToEnd loads an upstream connector file with every JSON
// transform, drains messages through the real run, and compares the
// records with the transform package's golden outputs. Values computed from
// the server timestamp are checked against the record's own timestamp, as
// the broker stamps messages with its clock.
func TestTransformsEndToEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t) // HighOffset pads each partition up to the golden offsets
		testdata := filepath.Join("..", "transform", "testdata")
		inputs := readLines(t, filepath.Join(testdata, "upstream_transforms.input.jsonl"))
		golden := readLines(t, filepath.Join(testdata, "upstream_transforms.golden.jsonl"))

		if _, err := broker.CreateStream("app_logs"); err != nil {
			t.Fatal(err)
		}
		if _, err := broker.CreateTopic("app_logs", "users", 4); err != nil {
			t.Fatal(err)
		}
		type input struct {
			Partition uint32          `json:"partition"`
			Offset    uint64          `json:"offset"`
			Payload   json.RawMessage `json:"payload"`
		}
		want := map[[2]uint64][]byte{}
		for i, line := range inputs {
			var in input
			if err := json.Unmarshal(line, &in); err != nil {
				t.Fatal(err)
			}
			for {
				high, ok := broker.HighOffset("app_logs", "users", in.Partition)
				next := uint64(0)
				if ok {
					next = high + 1
				}
				if next == in.Offset {
					break
				}
				if _, err := broker.Append("app_logs", "users", in.Partition, []byte(`{"filler":true}`), nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := broker.Append("app_logs", "users", in.Partition, in.Payload, nil); err != nil {
				t.Fatal(err)
			}
			want[[2]uint64{uint64(in.Partition), in.Offset}] = golden[i]
		}

		set := w.settings("transforms", "users")
		delete(set, "SINK_STREAM")
		delete(set, "SINK_TOPICS")
		delete(set, "SINK_CONSUMER_GROUP")
		path := filepath.Join(testdata, "upstream_transforms.toml")
		cfg, err := config.Load(path, func(k string) (string, bool) { v, ok := set[k]; return v, ok })
		if err != nil {
			t.Fatalf("the upstream file does not load: %v", err)
		}
		if len(cfg.Transforms) == 0 {
			t.Fatal("no transforms loaded")
		}
		s := w.sink(cfg, app.Options{})
		if _, err := s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, o := range w.objects(s, "archive/") {
			for _, r := range decode(t, "json_lines", o) {
				g, ok := want[[2]uint64{uint64(r.PartitionID), r.Offset}]
				if !ok {
					continue
				}
				seen++
				got, exp := decodeNumber(t, r.Payload), decodeNumber(t, g)
				if obj, ok := got.(map[string]any); ok {
					ts, err := time.Parse(time.RFC3339, r.Timestamp)
					if err != nil {
						t.Fatal(err)
					}
					if obj["ingested_at"] != r.Timestamp {
						t.Fatalf("offset %d: ingested_at %v, want the message time %s", r.Offset, obj["ingested_at"], r.Timestamp)
					}
					ms, _ := strconv.ParseInt(string(obj["ingested_ms"].(json.Number)), 10, 64)
					if ms/1000 != ts.Unix() {
						t.Fatalf("offset %d: ingested_ms %d is not the message time %s", r.Offset, ms, r.Timestamp)
					}
					if id7 := obj["event_id7"].(string); strings.ReplaceAll(id7, "-", "")[:12] != fmt.Sprintf("%012x", ms) {
						t.Fatalf("offset %d: uuid_v7 %s does not carry the message time %d ms", r.Offset, id7, ms)
					}
					eobj := exp.(map[string]any)
					for _, k := range []string{"ingested_at", "ingested_ms", "event_id7"} {
						delete(obj, k)
						delete(eobj, k)
					}
				}
				if !reflect.DeepEqual(got, exp) {
					t.Fatalf("offset %d partition %d:\n got  %s\n want %s", r.Offset, r.PartitionID, r.Payload, g)
				}
			}
		}
		if seen != len(inputs) {
			t.Fatalf("found %d of the %d transformed records", seen, len(inputs))
		}
	})
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
	}
	return lines
}

func decodeNumber(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

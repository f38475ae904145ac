package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var sampleNow = time.Date(2026, 11, 30, 4, 0, 1, 234_000_000, time.UTC)

func sampleRun() Run {
	return Run{
		Function: "iggy-s3-sink",
		Duration: 1234567 * time.Microsecond,
		Partitions: []Partition{
			{Stream: "orders", Topic: "created", Partition: 1, Objects: 3, Messages: 3000, Bytes: 25_165_824, Lag: 12, Retries: 1},
			{Stream: "orders", Topic: "created", Partition: 2, Objects: 1, Messages: 17, Bytes: 4096, Lag: 250_000, GapMessages: 5, InvalidPayloads: 2},
		},
	}
}

// emfLine is the part of an EMF document CloudWatch reads.
type emfLine struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// parseEMF checks every line against the EMF specification and returns the
// lines' metadata and their top-level values.
func parseEMF(t *testing.T, out []byte) ([]emfLine, []map[string]any) {
	t.Helper()
	validUnits := map[string]bool{"Count": true, "Bytes": true, "Milliseconds": true, "Seconds": true, "None": true}
	var metas []emfLine
	var values []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		raw := sc.Bytes()
		var meta emfLine
		var top map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&top); err != nil {
			t.Fatalf("line is not a JSON object: %v\n%s", err, raw)
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatalf("line has no readable _aws metadata: %v\n%s", err, raw)
		}
		if meta.AWS.Timestamp <= 0 || len(meta.AWS.CloudWatchMetrics) == 0 {
			t.Fatalf("line lacks _aws.Timestamp or CloudWatchMetrics: %s", raw)
		}
		for _, d := range meta.AWS.CloudWatchMetrics {
			if d.Namespace == "" || len(d.Dimensions) == 0 || len(d.Metrics) == 0 || len(d.Metrics) > 100 {
				t.Fatalf("directive is incomplete: %s", raw)
			}
			for _, set := range d.Dimensions {
				if len(set) == 0 || len(set) > 30 {
					t.Fatalf("dimension set %v has %d names; EMF wants 1..30", set, len(set))
				}
				for _, name := range set {
					if s, ok := top[name].(string); !ok || s == "" {
						t.Fatalf("dimension %q has no top-level string value: %s", name, raw)
					}
				}
			}
			for _, m := range d.Metrics {
				if !validUnits[m.Unit] {
					t.Fatalf("metric %q has unit %q", m.Name, m.Unit)
				}
				if _, ok := top[m.Name].(json.Number); !ok {
					t.Fatalf("metric %q has no top-level number: %s", m.Name, raw)
				}
			}
		}
		metas = append(metas, meta)
		values = append(values, top)
	}
	if !bytes.HasSuffix(out, []byte("\n")) {
		t.Fatalf("output does not end in a newline")
	}
	return metas, values
}

func TestWriteEMFGolden(t *testing.T) {
	tests := []struct {
		name string
		run  Run
	}{
		{"two_partitions", sampleRun()},
		{"failed_no_partitions", Run{Function: "iggy-s3-sink", Duration: 45 * time.Second, Failed: true}},
		{"escaped_names", Run{Function: "fn", Duration: time.Millisecond, Partitions: []Partition{
			{Stream: `quote"back\slash`, Topic: "ünïcode <&>", Partition: 4294967295, Lag: math.MaxUint64},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteEMF(&buf, "IggyS3Sink", sampleNow, tt.run); err != nil {
				t.Fatal(err)
			}
			parseEMF(t, buf.Bytes())
			golden := filepath.Join("testdata", tt.name+".golden.jsonl")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("output differs from %s:\n got: %s\nwant: %s", golden, buf.Bytes(), want)
			}
		})
	}
}

func TestWriteEMFContent(t *testing.T) {
	run := sampleRun()
	var buf bytes.Buffer
	if err := WriteEMF(&buf, "Team/Sink", sampleNow, run); err != nil {
		t.Fatal(err)
	}
	metas, values := parseEMF(t, buf.Bytes())
	if len(metas) != len(run.Partitions)+1 {
		t.Fatalf("got %d lines, want one per partition plus one run line (%d)", len(metas), len(run.Partitions)+1)
	}
	num := func(v map[string]any, name string) float64 {
		t.Helper()
		n, ok := v[name].(json.Number)
		if !ok {
			t.Fatalf("no number %q in %v", name, v)
		}
		f, err := n.Float64()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for i, p := range run.Partitions {
		m, v := metas[i], values[i]
		if m.AWS.Timestamp != sampleNow.UnixMilli() {
			t.Errorf("line %d: Timestamp %d, want %d", i, m.AWS.Timestamp, sampleNow.UnixMilli())
		}
		d := m.AWS.CloudWatchMetrics[0]
		if d.Namespace != "Team/Sink" {
			t.Errorf("line %d: namespace %q", i, d.Namespace)
		}
		if got := strings.Join(d.Dimensions[0], ","); got != "Function,Stream,Topic,Partition" {
			t.Errorf("line %d: dimensions %s", i, got)
		}
		if v["Function"] != run.Function || v["Stream"] != p.Stream || v["Topic"] != p.Topic {
			t.Errorf("line %d: dimension values %v", i, v)
		}
		if v["Partition"] != map[uint32]string{1: "1", 2: "2"}[p.Partition] {
			t.Errorf("line %d: Partition %v, want the partition id as a string", i, v["Partition"])
		}
		for name, want := range map[string]uint64{"Objects": p.Objects, "Messages": p.Messages, "Bytes": p.Bytes, "Lag": p.Lag,
			"GapMessages": p.GapMessages, "InvalidPayloads": p.InvalidPayloads, "Retries": p.Retries} {
			if got := num(v, name); got != float64(want) {
				t.Errorf("line %d: %s = %v, want %d", i, name, got, want)
			}
		}
	}

	last, lv := metas[len(metas)-1], values[len(values)-1]
	if got := last.AWS.CloudWatchMetrics[0].Dimensions; len(got) != 1 || len(got[0]) != 1 || got[0][0] != "Function" {
		t.Fatalf("run line dimensions %v, want [[Function]]", got)
	}
	var sum Partition
	var maxLag uint64
	for _, p := range run.Partitions {
		sum.Objects += p.Objects
		sum.Messages += p.Messages
		sum.Bytes += p.Bytes
		sum.GapMessages += p.GapMessages
		sum.InvalidPayloads += p.InvalidPayloads
		sum.Retries += p.Retries
		maxLag = max(maxLag, p.Lag)
	}
	for name, want := range map[string]float64{
		"Objects": float64(sum.Objects), "Messages": float64(sum.Messages), "Bytes": float64(sum.Bytes),
		"GapMessages": float64(sum.GapMessages), "InvalidPayloads": float64(sum.InvalidPayloads), "Retries": float64(sum.Retries),
		"Lag": float64(maxLag), "Failed": 0, "Partitions": float64(len(run.Partitions)),
		"Duration": float64(run.Duration) / float64(time.Millisecond),
	} {
		if got := num(lv, name); got != want {
			t.Errorf("run line: %s = %v, want %v", name, got, want)
		}
	}
	units := map[string]string{}
	for _, m := range last.AWS.CloudWatchMetrics[0].Metrics {
		units[m.Name] = m.Unit
	}
	if units["Duration"] != "Milliseconds" || units["Bytes"] != "Bytes" || units["Messages"] != "Count" {
		t.Errorf("run line units %v", units)
	}
}

func TestWriteEMFFailedRunWithoutPartitions(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteEMF(&buf, "IggyS3Sink", sampleNow, Run{Function: "f", Duration: 2 * time.Second, Failed: true}); err != nil {
		t.Fatal(err)
	}
	metas, values := parseEMF(t, buf.Bytes())
	if len(metas) != 1 {
		t.Fatalf("got %d lines, want only the run line", len(metas))
	}
	if values[0]["Failed"] != json.Number("1") || values[0]["Partitions"] != json.Number("0") || values[0]["Duration"] != json.Number("2000") {
		t.Errorf("run line values %v", values[0])
	}
	if _, ok := values[0]["Lag"]; ok {
		t.Errorf("a run that drained no partition reported a Lag: %v", values[0])
	}
	for _, m := range metas[0].AWS.CloudWatchMetrics[0].Metrics {
		if m.Name == "Lag" {
			t.Errorf("a run that drained no partition declared a Lag metric")
		}
	}
}

// lineWriter records each Write so the test can see lines are whole.
type lineWriter struct{ writes [][]byte }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestWriteEMFOneWritePerLine(t *testing.T) {
	var w lineWriter
	if err := WriteEMF(&w, "IggyS3Sink", sampleNow, sampleRun()); err != nil {
		t.Fatal(err)
	}
	if len(w.writes) != 3 {
		t.Fatalf("%d writes, want 3", len(w.writes))
	}
	for i, p := range w.writes {
		if bytes.Count(p, []byte("\n")) != 1 || !bytes.HasSuffix(p, []byte("\n")) || !json.Valid(p) {
			t.Errorf("write %d is not exactly one JSON line: %q", i, p)
		}
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteEMFErrors(t *testing.T) {
	long := strings.Repeat("x", 1025)
	tests := []struct {
		name      string
		namespace string
		run       Run
		want      string // in the message
	}{
		{"empty namespace", "", sampleRun(), "namespace is empty"},
		{"reserved namespace", "AWS/Lambda", sampleRun(), "AWS/ prefix is reserved"},
		{"namespace with bad character", "Iggy$Sink", sampleRun(), `contains '$'`},
		{"namespace starting with colon", ":Sink", sampleRun(), "must not start with ':'"},
		{"namespace too long", strings.Repeat("n", 256), sampleRun(), "256 characters"},
		{"empty function", "IggyS3Sink", Run{}, "function name is empty"},
		{"blank function", "IggyS3Sink", Run{Function: "  "}, "function name is empty"},
		{"negative duration", "IggyS3Sink", Run{Function: "f", Duration: -time.Second}, "duration -1s is negative"},
		{"empty stream", "IggyS3Sink", Run{Function: "f", Partitions: []Partition{{Topic: "t", Partition: 7}}}, "stream name of partition 7 is empty"},
		{"empty topic", "IggyS3Sink", Run{Function: "f", Partitions: []Partition{{Stream: "s", Partition: 3}}}, `topic name of partition 3 of stream "s" is empty`},
		{"long topic", "IggyS3Sink", Run{Function: "f", Partitions: []Partition{{Stream: "s", Topic: long}}}, "1025 bytes long"},
		{"invalid utf-8", "IggyS3Sink", Run{Function: "f\xff"}, "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteEMF(&buf, tt.namespace, sampleNow, tt.run)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to mention %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes despite invalid input", buf.Len())
			}
		})
	}

	wantErr := errors.New("disk full")
	err := WriteEMF(failingWriter{wantErr}, "IggyS3Sink", sampleNow, sampleRun())
	if !errors.Is(err, wantErr) {
		t.Fatalf("writer error not wrapped: %v", err)
	}
}

func TestValidNamespaceAccepts(t *testing.T) {
	for _, ns := range []string{"IggyS3Sink", "Team/iggy-s3-sink", "a.b_c#d:e f", strings.Repeat("n", 255)} {
		if err := ValidNamespace(ns); err != nil {
			t.Errorf("ValidNamespace(%q) = %v", ns, err)
		}
	}
}

func FuzzWriteEMF(f *testing.F) {
	f.Add("iggy-s3-sink", "orders", "created", uint32(1), uint64(10), int64(1500))
	f.Add("fn", `q"\`, "\u2028<&>", uint32(0), uint64(math.MaxUint64), int64(0))
	f.Fuzz(func(t *testing.T, function, stream, topic string, partition uint32, lag uint64, durMs int64) {
		run := Run{Function: function, Duration: time.Duration(durMs) * time.Millisecond,
			Partitions: []Partition{{Stream: stream, Topic: topic, Partition: partition, Lag: lag, Messages: lag / 2}}}
		var buf bytes.Buffer
		if err := WriteEMF(&buf, "IggyS3Sink", sampleNow, run); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		_, values := parseEMF(t, buf.Bytes())
		if len(values) != 2 {
			t.Fatalf("got %d lines", len(values))
		}
		if values[0]["Function"] != function || values[0]["Stream"] != stream || values[0]["Topic"] != topic {
			t.Fatalf("dimension values did not round-trip: %v", values[0])
		}
	})
}

func BenchmarkWriteEMF(b *testing.B) {
	run := Run{Function: "iggy-s3-sink", Duration: 3 * time.Second}
	for i := range 16 {
		run.Partitions = append(run.Partitions, Partition{Stream: "orders", Topic: "created", Partition: uint32(i), Objects: 2, Messages: 20000, Bytes: 16 << 20, Lag: 42})
	}
	var buf bytes.Buffer
	if err := WriteEMF(&buf, "IggyS3Sink", sampleNow, run); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := WriteEMF(&buf, "IggyS3Sink", sampleNow, run); err != nil {
			b.Fatal(err)
		}
	}
}

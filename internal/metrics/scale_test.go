package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestScaleLinesGolden(t *testing.T) {
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
		want  map[string]float64
	}{
		{"fan_out", func(b *bytes.Buffer) error {
			return WriteFanOut(b, "IggyS3Sink", sampleNow, FanOut{Function: "iggy-s3-sink", Workers: 3, Started: 2, Settle: 1500 * time.Millisecond})
		}, map[string]float64{MetricWorkers: 3, MetricWorkersStarted: 2, MetricSettleTime: 1500}},
		{"audit_overlap", func(b *bytes.Buffer) error {
			return WriteAudit(b, "IggyS3Sink", sampleNow, Audit{Function: "iggy-s3-sink", Partitions: 16, Objects: 480, GapMarkers: 1, Overlaps: 1})
		}, map[string]float64{MetricAuditPartitions: 16, MetricAuditObjects: 480, MetricAuditGapMarkers: 1, MetricAuditGaps: 0, MetricAuditOverlaps: 1}},
		{"tables", func(b *bytes.Buffer) error {
			return WriteTables(b, "IggyS3Sink", sampleNow, Tables{Function: "iggy-s3-sink", Commits: 2, Conflicts: 1, Files: 9, Latency: 250 * time.Millisecond})
		}, map[string]float64{MetricTableCommits: 2, MetricTableConflicts: 1, MetricTableFiles: 9, MetricTableCommitLatency: 250, MetricTableFailures: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf); err != nil {
				t.Fatal(err)
			}
			metas, values := parseEMF(t, buf.Bytes())
			if len(metas) != 1 {
				t.Fatalf("%d lines, want 1", len(metas))
			}
			d := metas[0].AWS.CloudWatchMetrics[0]
			if len(d.Dimensions) != 1 || len(d.Dimensions[0]) != 1 || d.Dimensions[0][0] != DimFunction || values[0][DimFunction] != "iggy-s3-sink" {
				t.Fatalf("dimensions %v (Function %v), want [[Function]] = iggy-s3-sink", d.Dimensions, values[0][DimFunction])
			}
			if len(d.Metrics) != len(tt.want) {
				t.Fatalf("metrics %v, want %d", d.Metrics, len(tt.want))
			}
			for name, want := range tt.want {
				got, err := values[0][name].(json.Number).Float64()
				if err != nil || got != want {
					t.Errorf("%s = %v, want %v", name, values[0][name], want)
				}
			}
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

func TestScaleLinesRefuseBadInput(t *testing.T) {
	var buf bytes.Buffer
	for name, err := range map[string]error{
		"empty function":     WriteFanOut(&buf, "IggyS3Sink", sampleNow, FanOut{Workers: 1}),
		"negative workers":   WriteFanOut(&buf, "IggyS3Sink", sampleNow, FanOut{Function: "f", Workers: -1}),
		"reserved namespace": WriteAudit(&buf, "AWS/Lambda", sampleNow, Audit{Function: "f"}),
		"negative gaps":      WriteAudit(&buf, "IggyS3Sink", sampleNow, Audit{Function: "f", Gaps: -2}),
		"negative commits":   WriteTables(&buf, "IggyS3Sink", sampleNow, Tables{Function: "f", Commits: -1}),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("refused input wrote %q", buf.String())
	}
}

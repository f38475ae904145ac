package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
)

func emfLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestEMFLeavesOutPartitionsOthersHold: in a cohort every member lists
// every partition, but only the one that drained a partition knows its
// lag; the others' figure (the whole partition, no committed offset in
// hand) must not reach the Lag metric or the lag alarm.
func TestEMFLeavesOutPartitionsOthersHold(t *testing.T) {
	var buf bytes.Buffer
	e := &EMF{W: &buf, Function: "fn"}
	committed := uint64(99)
	e.OnRunEnd(&drain.Summary{DurationMS: 1000, Partitions: []drain.PartitionSummary{
		{Stream: "s", Topic: "t", Partition: 0, Objects: 2, Messages: 100, Committed: &committed, Lag: 5},
		{Stream: "s", Topic: "t", Partition: 1, Held: true, Skipped: `assigned to another member of consumer group "g"`},
		{Stream: "s", Topic: "t", Partition: 2, Lag: 0, Skipped: "partition is empty"},
		{Stream: "s", Topic: "t", Partition: 3, Held: true, Skipped: "leased by another run: ..."},
	}}, nil)
	lines := emfLines(t, buf.Bytes())
	if len(lines) != 3 {
		t.Fatalf("%d lines, want partitions 0 and 2 and the run line:\n%s", len(lines), buf.String())
	}
	if lines[0]["Partition"] != "0" || lines[1]["Partition"] != "2" {
		t.Fatalf("partition lines for %v and %v, want 0 and 2", lines[0]["Partition"], lines[1]["Partition"])
	}
	if run := lines[2]; run["Lag"] != 5.0 || run["Partitions"] != 2.0 || run["Messages"] != 100.0 {
		t.Fatalf("run line %v: want Lag 5 over 2 partitions", run)
	}
}

func TestEMFFanOutAndAuditLines(t *testing.T) {
	var buf bytes.Buffer
	e := &EMF{W: &buf, Namespace: "Team/Sink", Function: "fn"}
	e.WriteFanOut(FanOut{Workers: 3, Started: 2})
	e.WriteAudit(Audit{Partitions: 4, Overlaps: 1})
	lines := emfLines(t, buf.Bytes())
	if len(lines) != 2 || lines[0]["Function"] != "fn" || lines[0]["WorkersStarted"] != 2.0 || lines[1]["Function"] != "fn" || lines[1]["AuditOverlaps"] != 1.0 {
		t.Fatalf("lines:\n%s", buf.String())
	}
}

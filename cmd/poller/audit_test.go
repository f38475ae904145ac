package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
)

// auditVerdict is what `poller audit -json` prints, as a user's script reads it.
type auditVerdict struct {
	OK         bool `json:"ok"`
	Partitions int  `json:"partitions"`
	Objects    int  `json:"objects"`
	Overlaps   int  `json:"overlaps"`
	Gaps       int  `json:"unreported_gaps"`
	Reports    []struct {
		Stream       string   `json:"stream"`
		Partition    uint32   `json:"partition"`
		Committed    *uint64  `json:"committed"`
		StateWritten *uint64  `json:"state_written"`
		Overlaps     []string `json:"overlaps"`
	} `json:"reports"`
}

func TestAuditJSON(t *testing.T) {
	st := newStack(t, 300)
	st.setenv(t)
	var out, errb bytes.Buffer
	if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errb.String())
	}
	read := func(args ...string) (auditVerdict, int) {
		t.Helper()
		out.Reset()
		code := run(args, nil, &out, &errb)
		var v auditVerdict
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Fatalf("poller %v: stdout is not one JSON document: %v\n%s", args, err, out.String())
		}
		return v, code
	}
	// The flag may come before or after the command.
	for _, args := range [][]string{{"audit", "-json"}, {"-json", "audit"}} {
		v, code := read(args...)
		if code != 0 || !v.OK || v.Partitions != 3 || v.Objects != 6 || len(v.Reports) != 3 {
			t.Fatalf("poller %v: exit %d, verdict %+v", args, code, v)
		}
		for _, r := range v.Reports {
			if r.Committed == nil || *r.Committed != 99 || r.StateWritten == nil || *r.StateWritten != 99 {
				t.Fatalf("partition %d: committed %v, state written %v; want 99 and 99", r.Partition, r.Committed, r.StateWritten)
			}
		}
	}

	client := st.s3.Client(t)
	list, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("poller"), Prefix: aws.String("p/app/")})
	if err != nil || len(list.Contents) == 0 {
		t.Fatalf("list: %v", err)
	}
	key := *list.Contents[0].Key
	overlap := key[:strings.LastIndexByte(key, '/')+1] + "00000-00000000000000000040-00000000000000000060.jsonl"
	if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("poller"), Key: aws.String(overlap), Body: strings.NewReader("{}\n")}); err != nil {
		t.Fatal(err)
	}
	// 40..60 overlaps both of its neighbours, 0..49 and 50..99.
	v, code := read("audit", "-json")
	if code != 1 || v.OK || v.Overlaps != 2 || len(v.Reports[0].Overlaps) != 2 || !strings.Contains(v.Reports[0].Overlaps[0], overlap) {
		t.Fatalf("planted overlap: exit %d, verdict %+v", code, v)
	}
	if !strings.Contains(errb.String(), "poller audit: audit found overlapping objects or unreported gaps: 2 overlaps and 0 unreported gaps: app/logs partition 0:") {
		t.Fatalf("stderr does not name the violation:\n%s", errb.String())
	}

	errb.Reset()
	if code := run([]string{"once", "-json"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "-json (a flag of audit, replay)") {
		t.Fatalf("once -json: exit %d: %s", code, errb.String())
	}
}

func TestAuditProgressLine(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var buf bytes.Buffer
	p := newAuditProgress(&buf, clock, 2*time.Second)
	step := audit.Progress{Index: 2, Partitions: 16, Stream: "app", Topic: "logs", Partition: 2, Listed: 1000, Total: 41000}
	p.report(step) // at once: a short listing prints nothing
	now = now.Add(1500 * time.Millisecond)
	p.report(step)
	if buf.Len() != 0 {
		t.Fatalf("progress before 2s: %q", buf.String())
	}
	now = now.Add(time.Second)
	p.report(step)
	now = now.Add(time.Second) // within 2s of the last line
	step.Done = true
	p.report(step)
	want := "audit: 41000 keys listed so far; listing app/logs partition 2 (3 of 16): 1000 keys\n"
	if buf.String() != want {
		t.Fatalf("progress lines:\n%q\nwant\n%q", buf.String(), want)
	}
	now = now.Add(2 * time.Second)
	p.report(step)
	if !strings.HasSuffix(buf.String(), "listed app/logs partition 2 (3 of 16): 1000 keys\n") {
		t.Fatalf("second line: %q", buf.String())
	}
	now = now.Add(2 * time.Second)
	step.Sharing = 6 // a time-first template: one listing for every topic's partitions
	p.report(step)
	if !strings.HasSuffix(buf.String(), "listed app/logs partition 2 (3 of 16, a listing 6 partitions share): 1000 keys\n") {
		t.Fatalf("shared listing's line: %q", buf.String())
	}
}

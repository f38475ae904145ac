package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestDeadlineCutReleasesLeases (issue 14): an invocation whose deadline
// comes in the middle of a drain stops (a stop, not a failure), releases
// every lease it took and leaves its group; the next invocation, at once,
// skips no partition and continues where the first stopped.
func TestDeadlineCutReleasesLeases(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	event, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	broker, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	if err := broker.Seed("app", "big", 4, 400000); err != nil {
		t.Fatal(err)
	}
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "deadline-archive")
	moto := testenv.StartMoto(t)
	if err := state.NewDynamo(moto.DynamoClient(t), "deadline-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A 9 s function: 5 s are kept for clean-up, so each run has about
	// 4 s, stops starting objects 1 s before that, and cannot drain 400,000
	// messages in that time.
	emu := startEmulator(t, buildBootstrap(t), []string{
		"AWS_LAMBDA_FUNCTION_NAME=iggy-s3-sink", "AWS_LAMBDA_FUNCTION_TIMEOUT=9", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + s3srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3srv.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_S3=" + s3srv.Endpoint, "AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		"SINK_BUCKET=deadline-archive", "SINK_STREAM=app", "SINK_TOPICS=big", "SINK_STATE_TABLE=deadline-state",
		"SINK_MAX_FILE_SIZE=256KiB", "SINK_DEADLINE_MARGIN=1s", "SINK_BATCH_LENGTH=1000", "SINK_LEASE_DURATION=60s",
		"IGGY_ADDRESS=" + broker.Addr(), "IGGY_USERNAME=iggy", "IGGY_PASSWORD=iggy",
	})
	var first drain.Summary
	body := emu.invoke(t, event, 30*time.Second)
	if err := json.Unmarshal(body, &first); err != nil {
		t.Fatalf("first invocation: %v: %s", err, body)
	}
	if first.Stopped != "deadline" || first.Failed != 0 || first.Objects == 0 {
		t.Fatalf("first invocation: stopped %q, %d failed, %d objects; want a deadline stop mid-drain: %s", first.Stopped, first.Failed, first.Objects, body)
	}
	if first.LeasesReleased != first.Leases || first.Leases == 0 || first.GroupsLeft != first.Groups {
		t.Fatalf("first invocation released %d of %d leases and left %d of %d groups", first.LeasesReleased, first.Leases, first.GroupsLeft, first.Groups)
	}
	var second drain.Summary
	body = emu.invoke(t, event, 30*time.Second)
	if err := json.Unmarshal(body, &second); err != nil {
		t.Fatalf("second invocation: %v: %s", err, body)
	}
	for _, p := range second.Partitions {
		if strings.HasPrefix(p.Skipped, "leased") {
			t.Fatalf("second invocation skipped partition %d: %s", p.Partition, p.Skipped)
		}
	}
	for i, p := range first.Partitions {
		q := second.Partitions[i]
		if p.Committed != nil && q.FirstOffset != nil && *q.FirstOffset != *p.Committed+1 {
			t.Fatalf("partition %d: second invocation started at %d, the first committed %d", p.Partition, *q.FirstOffset, *p.Committed)
		}
	}
	if second.Objects == 0 {
		t.Fatalf("the second invocation wrote nothing: %s", body)
	}
	t.Logf("first: %d objects, %d messages, stopped %s; second: %d objects, %d messages", first.Objects, first.Messages, first.Stopped, second.Objects, second.Messages)
	if logs := emu.output.String(); !strings.Contains(logs, `"msg":"run stopped"`) || strings.Contains(logs, `"msg":"run failed"`) {
		t.Fatalf("the function's log does not say the run stopped (or says it failed):\n%s", logs)
	}
}

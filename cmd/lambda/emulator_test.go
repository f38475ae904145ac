package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/cpulimit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// buildBootstrap builds the real Lambda binaries, the way `make bootstrap`
// does, for this machine's architecture (the emulator runs them here): the
// lean bootstrap, and bootstrap-iceberg beside it. It returns bootstrap.
func buildBootstrap(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, tags := range map[string]string{"bootstrap": "lambda.norpc,noiceberg", "bootstrap-iceberg": "lambda.norpc"} {
		cmd := exec.Command("go", "build", "-tags", tags, "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, name), ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, b)
		}
	}
	return filepath.Join(dir, "bootstrap")
}

type emulator struct {
	url    string
	cmd    *exec.Cmd
	output *testenv.LockedBuffer
}

// startEmulator runs bootstrap under aws-lambda-rie on loopback with env.
func startEmulator(t *testing.T, bootstrap string, env []string) *emulator {
	t.Helper()
	return startEmulatorIn(t, nil, bootstrap, env)
}

// startEmulatorIn is startEmulator with the emulator and the function in
// the CPU-limited group g (nil: no limit).
func startEmulatorIn(t *testing.T, g *cpulimit.Group, bootstrap string, env []string) *emulator {
	t.Helper()
	rie := testenv.RequireTool(t, "aws-lambda-rie")
	api := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	args := []string{"--runtime-interface-emulator-address", addr, "--runtime-api-address", api, bootstrap}
	cmd := exec.Command(rie, args...)
	cmd.Env = os.Environ()
	if g != nil {
		cmd = g.Command(rie, args...)
	}
	cmd.Env = append(cmd.Env, env...)
	out := &testenv.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("emulator output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("aws-lambda-rie did not listen on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &emulator{url: "http://" + addr + "/2015-03-31/functions/function/invocations", cmd: cmd, output: out}
}

// await returns the function's output once ok accepts it, or after 5s:
// the emulator copies the output after it has answered the invocation.
func (e *emulator) await(ok func(out string) bool) string {
	for wait := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out := e.output.String(); ok(out) || time.Now().After(wait) {
			return out
		}
	}
}

// logged reports whether the function's output holds s (see await).
func (e *emulator) logged(s string) bool {
	return strings.Contains(e.await(func(out string) bool { return strings.Contains(out, s) }), s)
}

// invoke posts the scheduled event and returns the body (the emulator
// answers 200 for handler errors too; the body says which it was).
func (e *emulator) invoke(t *testing.T, event []byte, timeout time.Duration) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(event))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke: HTTP %d: %s", resp.StatusCode, body)
	}
	return body
}

func TestLambdaUnderEmulator(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	event, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", "schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	broker, err := iggytest.Start(iggytest.WithUser("lambda", "lambda-pw-91b2"), iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	if err := broker.Seed("app", "logs", 4, 1000); err != nil {
		t.Fatal(err)
	}
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "lambda-archive")
	moto := testenv.StartMoto(t)
	// The template owns the table; the function never creates it.
	if err := state.NewDynamo(moto.DynamoClient(t), "sink-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	bootstrap := buildBootstrap(t)
	env := []string{
		"AWS_LAMBDA_FUNCTION_NAME=iggy-s3-sink", "AWS_LAMBDA_FUNCTION_TIMEOUT=30", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + s3srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3srv.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_S3=" + s3srv.Endpoint, "AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		"SINK_BUCKET=lambda-archive", "SINK_PREFIX=iggy", "SINK_STREAM=app", "SINK_TOPICS=logs",
		"SINK_CONSUMER_GROUP=lambda-sink", "SINK_STATE_TABLE=sink-state",
		"SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=100", "SINK_MAX_FILE_AGE=1h",
		"IGGY_ADDRESS=" + broker.Addr(), "IGGY_USERNAME=lambda", "IGGY_PASSWORD=lambda-pw-91b2",
	}
	emu := startEmulator(t, bootstrap, env)

	// First invocation: 1000 messages over 4 partitions, 100 per object.
	var sum drain.Summary
	body := emu.invoke(t, event, 30*time.Second)
	if err := json.Unmarshal(body, &sum); err != nil || sum.Objects == 0 {
		t.Fatalf("first invocation: %v: %s", err, body)
	}
	if sum.Messages != 800 || sum.Objects != 8 {
		// 250 per partition: two objects of 100 each, 50 not yet due.
		t.Fatalf("first invocation wrote %d objects / %d messages, want 8 / 800: %s", sum.Objects, sum.Messages, body)
	}
	t.Logf("first invocation: %d objects, %d messages, %d ms", sum.Objects, sum.Messages, sum.DurationMS)

	// More traffic; the second invocation continues where the first stopped.
	if err := broker.Seed("app", "logs", 4, 400); err != nil {
		t.Fatal(err)
	}
	body = emu.invoke(t, event, 30*time.Second)
	var sum2 drain.Summary
	if err := json.Unmarshal(body, &sum2); err != nil {
		t.Fatalf("second invocation: %v: %s", err, body)
	}
	for _, p := range sum2.Partitions {
		if p.FirstOffset != nil && *p.FirstOffset != 200 {
			t.Fatalf("partition %d: second invocation started at %d, want 200 (right after the first)", p.Partition, *p.FirstOffset)
		}
	}
	if sum2.Messages != 400 {
		t.Fatalf("second invocation wrote %d messages, want 400: %s", sum2.Messages, body)
	}

	// The objects are in the bucket, named by the template.
	client := s3srv.Client(t)
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: strPtr("lambda-archive"), Prefix: strPtr("iggy/app/logs/")})
	if err != nil {
		t.Fatal(err)
	}
	if int(*out.KeyCount) != int(sum.Objects+sum2.Objects) {
		t.Fatalf("bucket holds %d objects, the invocations reported %d", *out.KeyCount, sum.Objects+sum2.Objects)
	}
	for _, o := range out.Contents {
		if !strings.HasSuffix(*o.Key, ".jsonl") {
			t.Fatalf("unexpected key %s", *o.Key)
		}
	}
	// One summary line and EMF metrics per invocation reach the log.
	logs := emu.await(func(out string) bool { return strings.Count(out, `"msg":"run finished"`) >= 2 })
	if strings.Count(logs, `"msg":"run finished"`) != 2 || !strings.Contains(logs, `"CloudWatchMetrics"`) {
		t.Fatalf("emulator output lacks the summary lines or EMF metrics:\n%s", logs)
	}
	if strings.Contains(logs, "lambda-pw-91b2") || strings.Contains(logs, s3srv.SecretKey) {
		t.Fatal("a secret appears in the function's output")
	}

	// The example replay payload: the archive back into a new topic, then
	// again with nothing left to do.
	replayEvent, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "events", "replay.json"))
	if err != nil {
		t.Fatal(err)
	}
	archived := sum.Messages + sum2.Messages
	for i, want := range []uint64{archived, 0} {
		var rep struct {
			Mode     string `json:"mode"`
			Done     bool   `json:"done"`
			Replayed uint64 `json:"replayed"`
			Target   string `json:"target"`
		}
		body = emu.invoke(t, replayEvent, 30*time.Second)
		if err := json.Unmarshal(body, &rep); err != nil || rep.Mode != "replay" || !rep.Done || rep.Replayed != want || rep.Target != "app/logs-restored" {
			t.Fatalf("replay invocation %d: %v: %s (want %d replayed)", i+1, err, body, want)
		}
	}
	for p := range uint32(4) {
		// Seeded round robin: each partition archived archived/4 messages.
		if restored, ok := broker.HighOffset("app", "logs-restored", p); !ok || restored != archived/4-1 {
			t.Fatalf("partition %d: the restored topic ends at offset %d, the archive at %d", p, restored, archived/4-1)
		}
	}
}

func TestLambdaUnreachableIggy(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	s3srv := testenv.StartVersity(t)
	// S3 and the table are in place: the start-up check passes and the run meets Iggy.
	s3srv.CreateBucket(t, "lambda-archive")
	moto := testenv.StartMoto(t)
	if err := state.NewDynamo(moto.DynamoClient(t), "sink-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	env := []string{
		"AWS_LAMBDA_FUNCTION_NAME=iggy-s3-sink", "AWS_LAMBDA_FUNCTION_TIMEOUT=20", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + s3srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3srv.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_S3=" + s3srv.Endpoint, "AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		"SINK_BUCKET=lambda-archive", "SINK_STREAM=app", "SINK_TOPICS=logs", "SINK_STATE_TABLE=sink-state",
		"IGGY_ADDRESS=" + closed, "IGGY_CONNECT_TIMEOUT=2s",
	}
	emu := startEmulator(t, buildBootstrap(t), env)
	start := time.Now()
	body := emu.invoke(t, []byte(`{}`), 20*time.Second)
	took := time.Since(start)
	var fail struct{ ErrorMessage, ErrorType string }
	if err := json.Unmarshal(body, &fail); err != nil || fail.ErrorMessage == "" {
		t.Fatalf("want an error result, got %s", body)
	}
	if !strings.Contains(fail.ErrorMessage, closed) {
		t.Fatalf("error %q does not name the Iggy address %s", fail.ErrorMessage, closed)
	}
	if took > 5*time.Second {
		t.Fatalf("the failing invocation took %s with connect_timeout 2s", took)
	}
}

func strPtr(s string) *string { return &s }

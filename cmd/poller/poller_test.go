package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

func TestHelpDocumentsEveryCommandAndFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, nil, &out, &errb); code != 0 {
		t.Fatalf("-h exit %d", code)
	}
	for _, want := range []string{"run", "once", "audit", "demo", "-config", "-log-level", "-interval", "SINK_CONFIG"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("-h output lacks %q:\n%s", want, errb.String())
		}
	}
	if code := run([]string{"bogus"}, nil, &out, &errb); code != 2 {
		t.Fatalf("unknown command: exit %d, want 2", code)
	}
}

// TestDemo runs the demo as make demo builds it (-tags noiceberg,standins);
// the poller built without the stand-ins refuses it and says how to get it.
func TestDemo(t *testing.T) {
	out, err := exec.Command(buildPollerTags(t, "noiceberg,standins"), "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v:\n%s", err, out)
	}
	for _, want := range []string{"the server speaks Iggy 0.9 (protocol 0.11.0)", "Objects in s3://iggy-archive", "00000-00000000000000000000-00000000000000000399.jsonl", `"partition_id":0`, "ok   demo/app-logs partition 3"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	for _, cmd := range []string{"demo", "local"} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{cmd}, nil, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "run make "+cmd) {
			t.Errorf("%s in a poller built without the stand-ins: exit %d: %s", cmd, code, stderr.String())
		}
	}
}

func TestBadConfigExitsWithTheKey(t *testing.T) {
	line := badConfigOutput(t) // exits 2; the line the docs show (docs_test.go)
	if !strings.Contains(line, "max_file_size") || !strings.Contains(line, "8Mb") {
		t.Fatalf("error does not name key and value: %s", line)
	}
}

// stack is a broker, versitygw and moto_server, and the poller's environment for them.
type stack struct {
	broker *iggytest.Broker
	s3     *testenv.S3
	moto   *testenv.Moto
	env    []string
}

func newStack(t *testing.T, messages int) *stack {
	t.Helper()
	b, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Seed("app", "logs", 3, messages); err != nil {
		t.Fatal(err)
	}
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "poller")
	moto := testenv.StartMoto(t)
	return &stack{broker: b, s3: s3srv, moto: moto, env: []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=moto", "AWS_SECRET_ACCESS_KEY=moto-secret", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		"SINK_BUCKET=poller", "SINK_ENDPOINT=" + s3srv.Endpoint, "SINK_ACCESS_KEY_ID=" + s3srv.AccessKey, "SINK_SECRET_ACCESS_KEY=" + s3srv.SecretKey,
		"SINK_PREFIX=p", "SINK_STREAM=app", "SINK_TOPICS=logs", "SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=50",
		"SINK_MAX_FILE_AGE=1ms", "SINK_LEASE_DURATION=1s", "SINK_BATCH_LENGTH=20", "IGGY_ADDRESS=" + b.Addr(),
	}}
}

func (s *stack) setenv(t *testing.T) {
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

func TestOnceAndAudit(t *testing.T) {
	st := newStack(t, 600)
	st.setenv(t)
	var out, errb bytes.Buffer
	if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"audit"}, nil, &out, &errb); code != 0 {
		t.Fatalf("audit after a clean run: exit %d:\n%s\n%s", code, out.String(), errb.String())
	}
	if strings.Count(out.String(), "ok ") != 3 {
		t.Fatalf("audit report:\n%s", out.String())
	}

	// Plant an overlap: a copy of an object whose range overlaps its neighbour.
	client := st.s3.Client(t)
	ctx := context.Background()
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("poller"), Prefix: aws.String("p/app/")})
	if err != nil || len(list.Contents) < 2 {
		t.Fatalf("list: %v (%d objects)", err, len(list.Contents))
	}
	key := *list.Contents[1].Key // partition 0, offsets 50..99
	dir := key[:strings.LastIndexByte(key, '/')+1]
	overlap := dir + "00000-00000000000000000040-00000000000000000060.jsonl"
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("poller"), Key: aws.String(overlap), Body: strings.NewReader("{}\n")}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"audit"}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), "overlap") {
		t.Fatalf("audit with a planted overlap: exit %d:\n%s", code, out.String())
	}
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("poller"), Key: aws.String(overlap)}); err != nil {
		t.Fatal(err)
	}

	// Plant a gap: remove an object in the middle.
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("poller"), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"audit"}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), "gap: offsets 50..99") {
		t.Fatalf("audit with a planted gap: exit %d:\n%s", code, out.String())
	}
}

// buildPoller builds the real binary for process-level tests.
func buildPoller(t testing.TB) string {
	t.Helper()
	return buildPollerTags(t, "")
}

// buildPollerTags builds the poller with these build tags ("" for none).
func buildPollerTags(t testing.TB, tags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "poller")
	if b, err := exec.Command("go", "build", "-tags", tags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %q: %v\n%s", tags, err, b)
	}
	return bin
}

// TestRunStopsOnSignal: `poller run` loops until SIGTERM, then leaves the
// group, releases its leases and exits 0.
func TestRunStopsOnSignal(t *testing.T) {
	st := newStack(t, 300)
	bin := buildPoller(t)
	// Idle runs log their summary at debug; this test counts every run.
	cmd := exec.Command(bin, "-interval", "200ms", "run", "-log-level", "debug", "-log-format", "json")
	cmd.Env = append(os.Environ(), st.env...)
	logs := &testenv.LockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool { return strings.Count(logs.String(), `"msg":"run finished"`) >= 2 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("poller run did not exit 0 on SIGTERM: %v\n%s", err, logs.String())
	}
	for p := uint32(0); p < 3; p++ {
		if off, ok := st.broker.GroupOffset("app", "logs", "iggy-connect-sink-s3", p); !ok || off != 99 {
			t.Fatalf("partition %d committed %d (%v), want 99", p, off, ok)
		}
	}
	waitFor(t, 5*time.Second, func() bool { return st.broker.Connections() == 0 })
}

// TestKillAndRestart kills the poller with SIGKILL at several moments while
// it drains, restarts it, and checks the audit is clean and complete: on
// the in-repo broker, or on the real server IGGY_TEST_ADDRESS names.
func TestKillAndRestart(t *testing.T) {
	st := newKillStack(t, 6000)
	bin := buildPoller(t)
	group := "iggy-connect-sink-s3"
	// Each poller is killed as soon as it has made progress, so the kill
	// lands in the middle of draining (state and objects half-way).
	last := uint64(0)
	for i := 0; i < 3; i++ {
		cmd := exec.Command(bin, "-interval", "100ms", "run")
		cmd.Env = append(os.Environ(), st.env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, func() bool {
			off, ok := st.iggy.GroupOffset(st.stream, "logs", group, 0)
			return ok && off > last
		})
		cmd.Process.Kill()
		cmd.Wait()
		last, _ = st.iggy.GroupOffset(st.stream, "logs", group, 0)
		t.Logf("kill %d: partition 0 committed up to %d of 1999", i, last)
		if last >= 1999 {
			t.Fatalf("kill %d came after the partition was drained; the test needs more data", i)
		}
	}
	once := exec.Command(bin, "once")
	once.Env = append(os.Environ(), st.env...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := once.CombinedOutput()
		done := err == nil
		for p := uint32(0); p < 3 && done; p++ {
			off, ok := st.iggy.GroupOffset(st.stream, "logs", group, p)
			done = ok && off == 1999
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after the kills: %v\n%s", err, out)
		}
		time.Sleep(300 * time.Millisecond) // leases of killed processes expire after 1s
		once = exec.Command(bin, "once")
		once.Env = append(os.Environ(), st.env...)
	}
	audit := exec.Command(bin, "audit")
	audit.Env = append(os.Environ(), st.env...)
	out, err := audit.CombinedOutput()
	if err != nil {
		t.Fatalf("audit after kills: %v\n%s", err, out)
	}
	if strings.Count(string(out), "2000 messages") != 3 {
		t.Fatalf("audit does not count 2000 messages per partition:\n%s", out)
	}
}

// killStack is newStack's environment over any Iggy: the in-repo broker,
// or a real server (IGGY_TEST_ADDRESS, IGGY_TEST_PROTOCOL), where the
// stream gets a name of its own.
type killStack struct {
	iggy   iggyadmin.Admin
	stream string
	env    []string
}

func newKillStack(t *testing.T, messages int) *killStack {
	t.Helper()
	real := iggyadmin.FromEnv(t)
	if real == nil {
		st := newStack(t, messages)
		return &killStack{iggy: st.broker, stream: "app", env: st.env}
	}
	stream := fmt.Sprintf("kill-%d", time.Now().UnixNano())
	if _, err := real.CreateStream(stream); err != nil {
		t.Fatal(err)
	}
	if _, err := real.CreateTopic(stream, "logs", 3); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < messages; i++ {
		payload := fmt.Appendf(nil, `{"seq":%d,"msg":"kill and restart","pad":"%s"}`, i, strings.Repeat("x", 200))
		if _, err := real.Append(stream, "logs", uint32(i%3), payload, iggytest.SampleHeaders(uint32(1+i%3))); err != nil {
			t.Fatal(err)
		}
	}
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "poller")
	moto := testenv.StartMoto(t)
	return &killStack{iggy: real, stream: stream, env: []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=moto", "AWS_SECRET_ACCESS_KEY=moto-secret", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		"SINK_BUCKET=poller", "SINK_ENDPOINT=" + s3srv.Endpoint, "SINK_ACCESS_KEY_ID=" + s3srv.AccessKey, "SINK_SECRET_ACCESS_KEY=" + s3srv.SecretKey,
		"SINK_PREFIX=p", "SINK_STREAM=" + stream, "SINK_TOPICS=logs", "SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=50",
		"SINK_MAX_FILE_AGE=1ms", "SINK_LEASE_DURATION=1s", "SINK_BATCH_LENGTH=20", "IGGY_ADDRESS=" + real.Addr(),
		"IGGY_USERNAME=" + real.Username, "IGGY_PASSWORD=" + real.Password, "IGGY_PROTOCOL=" + real.SinkProtocol(),
	}}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

func tables(t *testing.T, st *stack) []string {
	t.Helper()
	out, err := st.moto.DynamoClient(t).ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	return out.TableNames
}

// objects lists the bucket: key -> ETag.
func objects(t *testing.T, st *stack) map[string]string {
	t.Helper()
	out, err := st.s3.Client(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("poller")})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, o := range out.Contents {
		m[*o.Key] = aws.ToString(o.ETag)
	}
	return m
}

func TestCheckCommand(t *testing.T) {
	st := newStack(t, 30)
	st.setenv(t)
	var out, errb bytes.Buffer
	// The poller creates its table on the first run; until then check says so.
	if code := run([]string{"check"}, nil, &out, &errb); code != 1 {
		t.Fatalf("check before the table exists: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), `FAIL  state table  table "iggy-s3-sink-state" does not exist`) ||
		!strings.Contains(errb.String(), "poller check: failed: state table:") {
		t.Fatalf("check does not name the missing table:\n%s%s", out.String(), errb.String())
	}
	if got := tables(t, st); len(got) != 0 {
		t.Fatalf("check created tables %v", got)
	}
	if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"check"}, nil, &out, &errb); code != 0 {
		t.Fatalf("check: exit %d\n%s", code, out.String())
	}
	n := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "ok ") {
			n++
		}
	}
	if n != 5 {
		t.Fatalf("want 5 ok lines:\n%s", out.String())
	}
	// versitygw keeps no lifecycle rules: the check warns (exit 0 above).
	if !strings.Contains(out.String(), "warn  s3 lifecycle ") || !strings.Contains(out.String(), "incomplete multipart uploads") {
		t.Fatalf("want a warning about the missing abort rule:\n%s", out.String())
	}
}

// TestOnceFailsAtStartWhenS3IsWrong: a missing bucket stops the run before
// it drains anything, instead of when the first object is due.
func TestOnceFailsAtStartWhenS3IsWrong(t *testing.T) {
	st := newStack(t, 30)
	st.setenv(t)
	t.Setenv("SINK_BUCKET", "no-such-bucket")
	var out, errb bytes.Buffer
	if code := run([]string{"once"}, nil, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), `start-up check failed: s3 bucket: bucket "no-such-bucket" does not exist`) {
		t.Fatalf("the error does not name the bucket:\n%s", errb.String())
	}
	if strings.Contains(errb.String(), "run finished") {
		t.Fatalf("a run started:\n%s", errb.String())
	}
	if _, ok := st.broker.GroupOffset("app", "logs", "iggy-connect-sink-s3", 0); ok {
		t.Fatal("an offset was committed")
	}
}

// TestAuditIsReadOnly: audit needs no state table, creates none, and
// leaves the bucket as it was.
func TestAuditIsReadOnly(t *testing.T) {
	st := newStack(t, 300)
	st.setenv(t)
	var out, errb bytes.Buffer
	if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
		t.Fatalf("once: exit %d: %s", code, errb.String())
	}
	before, tablesBefore := objects(t, st), tables(t, st)
	t.Setenv("SINK_STATE_TABLE", "typo-in-the-name")
	out.Reset()
	if code := run([]string{"audit"}, nil, &out, &errb); code != 0 || strings.Count(out.String(), "ok ") != 3 {
		t.Fatalf("audit: exit %d:\n%s\n%s", code, out.String(), errb.String())
	}
	if got := tables(t, st); strings.Join(got, ",") != strings.Join(tablesBefore, ",") {
		t.Fatalf("audit changed the tables: %v -> %v", tablesBefore, got)
	}
	after := objects(t, st)
	if len(after) != len(before) {
		t.Fatalf("audit changed the bucket: %d -> %d objects", len(before), len(after))
	}
	for k, etag := range before {
		if after[k] != etag {
			t.Fatalf("object %s changed", k)
		}
	}
	out.Reset()
	if code := run([]string{"status"}, nil, &out, &errb); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	// 100 per partition, 50 per object: all written and committed, no lag.
	for _, want := range []string{"STREAM/TOPIC", "app/logs      iggy-connect-sink-s3  0          99         99       0"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("status lacks %q:\n%s", want, out.String())
		}
	}
	if got := tables(t, st); len(got) != len(tablesBefore) {
		t.Fatalf("status created a table: %v", got)
	}
}

// TestDisabled: enabled = false (or SINK_ENABLED=false) stops the sink with
// one log line; nothing is read, written or created.
func TestDisabled(t *testing.T) {
	st := newStack(t, 30)
	st.setenv(t)
	dir := t.TempDir()
	file := dir + "/sink.toml"
	if err := os.WriteFile(file, []byte("enabled = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string
	}{
		{"file", []string{"once", "-config", file, "-log-format", "json"}, ""},
		{"environment", []string{"once", "-log-format", "json"}, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("SINK_ENABLED", tc.env)
			}
			var out, errb bytes.Buffer
			if code := run(tc.args, nil, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if n := strings.Count(errb.String(), "sink disabled"); n != 1 {
				t.Fatalf("%d 'sink disabled' lines, want 1:\n%s", n, errb.String())
			}
			if strings.Contains(errb.String(), "run finished") {
				t.Fatalf("a run happened:\n%s", errb.String())
			}
		})
	}
	if _, ok := st.broker.GroupOffset("app", "logs", "iggy-connect-sink-s3", 0); ok {
		t.Fatal("a disabled sink committed an offset")
	}
	if got := tables(t, st); len(got) != 0 {
		t.Fatalf("a disabled sink created tables %v", got)
	}
	if got := objects(t, st); len(got) != 0 {
		t.Fatalf("a disabled sink wrote %d objects", len(got))
	}
}

// TestRunQuietWhenIdle: at info, `poller run` logs runs that did something
// and pending counts that changed, not every idle second.
func TestRunQuietWhenIdle(t *testing.T) {
	st := newStack(t, 120) // 40 per partition: none full at 50, so all pending
	bin := buildPoller(t)
	cmd := exec.Command(bin, "run", "-interval", "100ms", "-log-format", "json")
	cmd.Env = append(os.Environ(), st.env...)
	cmd.Env = append(cmd.Env, "SINK_MAX_FILE_AGE=1h")
	logs := &testenv.LockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first run explains each partition's pending messages; about ten
	// idle runs follow before the stop. On a loaded machine the first run
	// can take longer than those ten would: wait for it, not for a time.
	const pending = "40 messages pending in app/logs partition"
	for deadline := time.Now().Add(2 * time.Minute); strings.Count(logs.String(), pending) < 3 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	out := logs.String()
	if n := strings.Count(out, `"msg":"run finished"`); n != 0 {
		t.Errorf("%d idle runs logged at info, want 0:\n%s", n, out)
	}
	if n := strings.Count(out, pending); n != 3 {
		t.Errorf("%d pending explanations at info, want one per partition (3):\n%s", n, out)
	}
}

// TestCheckShowsWhereValuesCameFrom: check prints the effective
// configuration with each value's source, and every command's log names the
// file values the environment replaced (secrets masked).
func TestCheckShowsWhereValuesCameFrom(t *testing.T) {
	st := newStack(t, 5)
	st.setenv(t)
	file := t.TempDir() + "/sink.toml"
	doc := "[[streams]]\nstream = \"app\"\ntopics = [\"logs\"]\nconsumer_group = \"from-file\"\n[plugin_config]\nbucket = \"poller\"\nmax_file_age = \"2m\"\ncompression = \"zstd\"\n[iggy]\npassword = \"file-password\"\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IGGY_PASSWORD", "env-password")
	var out, errb bytes.Buffer
	run([]string{"check", "-config", file}, nil, &out, &errb) // the table does not exist yet: exit 1, the configuration is printed first
	for _, re := range []string{
		`configuration \(file .*sink.toml, then the environment; secrets masked\):`,
		`plugin_config.max_file_age +1ms +environment SINK_MAX_FILE_AGE \(replaces the file's 2m0s\)`,
		`plugin_config.compression +"zstd" +file\n`,
		`streams\[0\].consumer_group +"from-file" +file\n`,
		`plugin_config.prefix +"p" +environment SINK_PREFIX\n`,
		`streams\[0\].schema +"json" +default\n`,
		`iggy.password +"\[redacted\]" +environment IGGY_PASSWORD \(replaces the file's "\[redacted\]"\)`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("check's output has no line matching %s:\n%s", re, out.String())
		}
	}
	log := errb.String()
	if !strings.Contains(log, "environment variables replaced values of the configuration file") ||
		!strings.Contains(log, "SINK_MAX_FILE_AGE") || !strings.Contains(log, "IGGY_PASSWORD") {
		t.Errorf("no log line names the replaced values:\n%s", log)
	}
	if all := out.String() + log; strings.Contains(all, "file-password") || strings.Contains(all, "env-password") {
		t.Errorf("a password is printed:\n%s%s", out.String(), log)
	}
}

package ops

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// servers is a broker, versitygw and moto_server with a bucket and a table,
// and the configuration that points at them.
type servers struct {
	broker *iggytest.Broker
	s3     *testenv.S3
	moto   *testenv.Moto
	cfg    map[string]string
}

func startServers(t *testing.T) *servers {
	t.Helper()
	b, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Seed("app", "logs", 2, 10); err != nil {
		t.Fatal(err)
	}
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "checked")
	moto := testenv.StartMoto(t)
	if err := state.NewDynamo(moto.DynamoClient(t), "sink-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The AWS SDK reads these; nothing here may reach a real AWS endpoint.
	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": s3srv.AccessKey, "AWS_SECRET_ACCESS_KEY": s3srv.SecretKey,
		"AWS_ENDPOINT_URL_S3": s3srv.Endpoint, "AWS_ENDPOINT_URL_DYNAMODB": moto.Endpoint, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	return &servers{broker: b, s3: s3srv, moto: moto, cfg: map[string]string{
		"SINK_BUCKET": "checked", "SINK_PREFIX": "iggy", "SINK_STREAM": "app", "SINK_TOPICS": "logs",
		"SINK_STATE_TABLE": "sink-state", "SINK_MAX_ATTEMPTS": "1", "IGGY_ADDRESS": b.Addr(), "IGGY_CONNECT_TIMEOUT": "2s",
	}}
}

// check builds a read-only sink from the servers' configuration with edits
// and runs Check, returning its lines.
func (s *servers) check(t *testing.T, edits map[string]string) ([]CheckResult, error) {
	t.Helper()
	env := map[string]string{}
	for k, v := range s.cfg {
		env[k] = v
	}
	for k, v := range edits {
		env[k] = v
	}
	cfg := loadEnv(t, env)
	sink, err := app.New(context.Background(), cfg, app.Options{ReadOnly: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var lines []CheckResult
	err = NewChecker(sink).Check(context.Background(), func(r CheckResult) { lines = append(lines, r) })
	return lines, err
}

func TestCheckAllGood(t *testing.T) {
	s := startServers(t)
	lines, err := s.check(t, nil)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	var names []string
	for _, l := range lines {
		names = append(names, l.Name)
		if l.Err != nil || l.Skip {
			t.Errorf("line %q is not ok", l)
		}
	}
	if got := strings.Join(names, ","); got != "iggy,topic,s3 bucket,s3 write,s3 lifecycle,state table" {
		t.Errorf("checks = %s", got)
	}
	for _, want := range []string{s.broker.Addr() + " speaks Iggy 0.9 (protocol 0.11.0)", `logged in to ` + s.broker.Addr() + ` as user "iggy"`, "app/logs: 2 partitions, 10 messages", "s3://checked/iggy/", `"sink-state" exists`} {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l.String(), want)
		}
		if !found {
			t.Errorf("no line says %q", want)
		}
	}
	// The write check writes nothing.
	out, err := s.s3.Client(t).ListObjectsV2(context.Background(), listInput("checked"))
	if err != nil || len(out.Contents) != 0 {
		t.Fatalf("the bucket holds %d objects after check (%v), want none", len(out.Contents), err)
	}
	ups, err := s.s3.Client(t).ListMultipartUploads(context.Background(), listUploadsInput("checked"))
	if err != nil || len(ups.Uploads) != 0 {
		t.Fatalf("%d multipart uploads left after check (%v), want none", len(ups.Uploads), err)
	}
}

// TestCheckNamesEachFailure breaks one thing at a time: Check reports that
// check as the first failure, with what to fix, and no secret.
func TestCheckNamesEachFailure(t *testing.T) {
	s := startServers(t)
	closed := closedAddr(t)
	tests := []struct {
		name   string
		edits  map[string]string
		unset  []string
		first  string
		want   []string
		others int // other failing lines expected
	}{
		{"bucket missing", map[string]string{"SINK_BUCKET": "no-such-bucket"}, nil,
			"s3 bucket", []string{`bucket "no-such-bucket" does not exist`, "SINK_BUCKET"}, 1},
		{"wrong secret", map[string]string{"SINK_ACCESS_KEY_ID": s.s3.AccessKey, "SINK_SECRET_ACCESS_KEY": "wrong-secret-9f3"}, nil,
			"s3 bucket", []string{"secret access key is wrong", "SINK_SECRET_ACCESS_KEY"}, 1},
		{"unknown access key", map[string]string{"SINK_ACCESS_KEY_ID": "nobody", "SINK_SECRET_ACCESS_KEY": "x"}, nil,
			"s3 bucket", []string{"access key id"}, 1},
		{"no S3 server", map[string]string{"SINK_ENDPOINT": "http://" + closed}, nil,
			"s3 bucket", []string{"no S3 server answers at endpoint http://" + closed}, 1},
		{"table missing", map[string]string{"SINK_STATE_TABLE": "sink-stat"}, nil,
			"state table", []string{`table "sink-stat" does not exist`, "SINK_STATE_TABLE"}, 0},
		{"DynamoDB without AWS credentials (S3 keys in the sink's own options)",
			map[string]string{"SINK_ACCESS_KEY_ID": s.s3.AccessKey, "SINK_SECRET_ACCESS_KEY": s.s3.SecretKey},
			[]string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
			"state table", []string{"DynamoDB needs AWS credentials", "access_key_id is for S3 only"}, 0},
		{"topic missing", map[string]string{"SINK_TOPICS": "nope"}, nil,
			"topic", []string{`iggy topic "nope" in stream "app"`, "not found", "never creates"}, 0},
		{"stream missing", map[string]string{"SINK_STREAM": "nope"}, nil,
			"topic", []string{`iggy stream "nope"`, "not found"}, 0},
		{"Iggy unreachable", map[string]string{"IGGY_ADDRESS": closed}, nil,
			"iggy", []string{"cannot reach Iggy at " + closed}, 0},
		{"wrong Iggy password", map[string]string{"IGGY_PASSWORD": "not-the-password-77"}, nil,
			"iggy", []string{"login to " + s.broker.Addr(), `user "iggy"`, "IGGY_USERNAME / IGGY_PASSWORD"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range tc.unset {
				t.Setenv(k, "")
			}
			lines, err := s.check(t, tc.edits)
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("Check = %v, want a *CheckError", err)
			}
			if ce.First.Name != tc.first {
				t.Fatalf("first failure %q, want %q: %v", ce.First.Name, tc.first, ce)
			}
			for _, want := range tc.want {
				if !strings.Contains(ce.Error(), want) {
					t.Errorf("%q lacks %q", ce.Error(), want)
				}
			}
			failed := 0
			for _, l := range lines {
				if l.Err != nil {
					failed++
				}
				for _, secret := range []string{"wrong-secret-9f3", "not-the-password-77", s.s3.SecretKey} {
					if strings.Contains(l.String(), secret) {
						t.Errorf("line %q shows a secret", l)
					}
				}
			}
			if failed != 1+tc.others {
				t.Errorf("%d failing lines, want %d:\n%s", failed, 1+tc.others, joinLines(lines))
			}
			if len(ce.Error()) > 400 {
				t.Errorf("the failure is %d characters long; want one short line: %s", len(ce.Error()), ce.Error())
			}
		})
	}
}

// TestPreflightFailsAtStart: a run's start-up check catches what only the
// first object would otherwise have met.
func TestPreflightFailsAtStart(t *testing.T) {
	s := startServers(t)
	env := map[string]string{}
	for k, v := range s.cfg {
		env[k] = v
	}
	env["SINK_BUCKET"] = "no-such-bucket"
	sink, err := app.New(context.Background(), loadEnv(t, env), app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = NewChecker(sink).Preflight(context.Background())
	var ce *CheckError
	if !errors.As(err, &ce) || ce.First.Name != "s3 bucket" || !strings.Contains(err.Error(), "no-such-bucket") {
		t.Fatalf("Preflight = %v, want the missing bucket named", err)
	}
	env["SINK_BUCKET"] = "checked"
	sink, err = app.New(context.Background(), loadEnv(t, env), app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := NewChecker(sink).Preflight(context.Background()); err != nil {
		t.Fatalf("Preflight with everything in place: %v", err)
	}
}

// TestNewCreatesTheTableLoudly: a missing table is created when asked
// (CreateTable, the poller's -create-table) and, for the poller, at a local
// endpoint such as moto's; either way a warning names it (a typo would
// otherwise start from empty state). The Lambda (neither option) gets an
// error naming the table and what to do, with no poller flag in it. The
// poller's refusal against AWS is tested in cmd/poller (TestStateTableOnAWS),
// through an AWS-shaped endpoint.
func TestNewCreatesTheTableLoudly(t *testing.T) {
	s := startServers(t)
	env := map[string]string{}
	for k, v := range s.cfg {
		env[k] = v
	}
	for _, tc := range []struct {
		table string
		opts  app.Options
		warn  string
	}{
		{"asked-table", app.Options{CreateTable: true}, "as asked (-create-table)"},
		{"local-table", app.Options{PollerTables: true}, "a local stand-in"},
	} {
		env["SINK_STATE_TABLE"] = tc.table
		var logs strings.Builder
		tc.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		if _, err := app.New(context.Background(), loadEnv(t, env), tc.opts); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), tc.table) || !strings.Contains(logs.String(), tc.warn) {
			t.Fatalf("no warning names the created table %s and why (%s):\n%s", tc.table, tc.warn, logs.String())
		}
		if err := state.NewDynamo(s.moto.DynamoClient(t), tc.table, nil).Check(context.Background()); err != nil {
			t.Fatalf("%s was not created: %v", tc.table, err)
		}
	}
	// Without either (the Lambda) a missing table is an error naming it.
	env["SINK_STATE_TABLE"] = "other-table"
	_, err := app.New(context.Background(), loadEnv(t, env), app.Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), `"other-table" does not exist at endpoint `+s.moto.Endpoint) ||
		!strings.Contains(err.Error(), "deploy the template") || strings.Contains(err.Error(), "-create-table") {
		t.Fatalf("New without CreateTable = %v", err)
	}
	if err := state.NewDynamo(s.moto.DynamoClient(t), "other-table", nil).Check(context.Background()); !errors.Is(err, state.ErrTableMissing) {
		t.Fatalf("the Lambda's New created the table, or: %v", err)
	}
}

// TestCheckNamesSimilarTables: the poller's check of a missing table names
// the tables of similar names at that endpoint, and that its once and run
// would create it there (a local endpoint).
func TestCheckNamesSimilarTables(t *testing.T) {
	s := startServers(t)
	for _, name := range []string{"prod-sink-state-Table-1ABC", "unrelated"} {
		if err := state.NewDynamo(s.moto.DynamoClient(t), name, nil).EnsureTable(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	sink := s.sink(t, map[string]string{"SINK_STATE_TABLE": "sink-stat"}, app.Options{ReadOnly: true, PollerTables: true, Logger: slog.New(slog.DiscardHandler)})
	r := NewChecker(sink).checkTable(context.Background())
	for _, want := range []string{`table "sink-stat" does not exist at endpoint ` + s.moto.Endpoint + " (AWS_ENDPOINT_URL_DYNAMODB)",
		`tables of similar names there: "sink-state", "prod-sink-state-Table-1ABC"`, "SINK_STATE_TABLE", "let poller once or run create it"} {
		if r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("check of a missing table: %v; want %q", r.Err, want)
		}
	}
	if r.Err != nil && strings.Contains(r.Err.Error(), "unrelated") {
		t.Errorf("an unrelated table is named: %v", r.Err)
	}
}

func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func joinLines(lines []CheckResult) string {
	var b strings.Builder
	for _, l := range lines {
		io.WriteString(&b, l.String()+"\n")
	}
	return b.String()
}

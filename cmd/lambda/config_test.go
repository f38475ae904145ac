package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// configStand is a broker with envelope-shaped events, versitygw, moto with
// the state table, and the function's environment for them.
type configStand struct {
	broker *iggytest.Broker
	s3     *testenv.S3
	moto   *testenv.Moto
	env    []string
}

func newConfigStand(t *testing.T) *configStand {
	t.Helper()
	b, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := b.CreateStream("app"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("app", "users", 1); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		payload := fmt.Sprintf(`{"data":{"id":%d,"name":"user-%d","password":"pw-%d","debug_note":"x"},"meta":{"v":1}}`, i, i, i)
		if _, err := b.Append("app", "users", 0, []byte(payload), nil); err != nil {
			t.Fatal(err)
		}
	}
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "archive")
	moto := testenv.StartMoto(t)
	if err := state.NewDynamo(moto.DynamoClient(t), "sink-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &configStand{broker: b, s3: s3srv, moto: moto, env: []string{
		"AWS_LAMBDA_FUNCTION_NAME=iggy-s3-sink", "AWS_LAMBDA_FUNCTION_TIMEOUT=30", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + s3srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3srv.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_S3=" + s3srv.Endpoint, "AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		// What these tests need; the file adds the rest (transforms, gzip, no metadata). The
		// environment the template itself gives is tested in internal/testkit/deploytest
		// (TestDeployedEnvironmentKeepsTheFile).
		"SINK_BUCKET=archive", "SINK_STREAM=app", "SINK_TOPICS=users", "SINK_STATE_TABLE=sink-state",
		"SINK_MAX_FILE_AGE=1ms", "IGGY_ADDRESS=" + b.Addr(),
	}}
}

// invokeOnce runs one scheduled invocation and returns its summary.
func (c *configStand) invokeOnce(t *testing.T, emu *emulator) drain.Summary {
	t.Helper()
	body := emu.invoke(t, []byte(`{}`), 30*time.Second)
	var sum drain.Summary
	if err := json.Unmarshal(body, &sum); err != nil || sum.Objects != 1 {
		t.Fatalf("invocation: %v: %s", err, body)
	}
	return sum
}

// checkTransformed reads the one object and checks that examples/transforms.toml
// shaped it: unwrapped, password and debug fields gone, event_id added, gzip.
func (c *configStand) checkTransformed(t *testing.T) {
	t.Helper()
	client := c.s3.Client(t)
	list, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("archive")})
	var data []string
	for _, o := range list.Contents {
		if !strings.HasPrefix(*o.Key, "_generations/") { // generation and name markers
			data = append(data, *o.Key)
		}
	}
	if err != nil || len(data) != 1 {
		t.Fatalf("list: %v, objects %v, want one", err, data)
	}
	key := data[0]
	if !strings.HasSuffix(key, ".jsonl.gz") {
		t.Fatalf("key %s: the file's compression = \"gzip\" was not applied", key)
	}
	obj, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("archive"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	zr, err := gzip.NewReader(obj.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d records:\n%s", len(lines), body)
	}
	for i, l := range lines {
		var rec struct {
			Payload map[string]any `json:"payload"`
			Offset  *uint64        `json:"offset"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		p := rec.Payload
		if rec.Offset != nil || p["name"] != fmt.Sprintf("user-%d", i) || p["password"] != nil || p["debug_note"] != nil || p["event_id"] == nil || p["ingested_at"] == nil {
			t.Fatalf("record %d was not transformed by the configuration file: %s", i, l)
		}
	}
}

// TestLambdaConfigBundled: `make build-SinkFunction CONFIG_FILE=...` (what
// sam build runs) puts the file in the package; SINK_CONFIG names it
// relative to the package, and its transforms shape the objects.
func TestLambdaConfigBundled(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	c := newConfigStand(t)
	pkg := t.TempDir()
	arch := map[string]string{"amd64": "x86_64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		t.Skipf("no Lambda architecture for %s", runtime.GOARCH)
	}
	build := exec.Command("make", "-s", "build-SinkFunction", "ARTIFACTS_DIR="+pkg, "ARCH="+arch, "CONFIG_FILE=examples/transforms.toml")
	build.Dir = testenv.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build-SinkFunction: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(pkg, "examples", "transforms.toml")); err != nil {
		t.Fatalf("the configuration file is not in the package: %v", err)
	}
	env := append(c.env, "SINK_CONFIG=examples/transforms.toml", "LAMBDA_TASK_ROOT="+pkg)
	emu := startEmulator(t, filepath.Join(pkg, "bootstrap"), env)
	c.invokeOnce(t, emu)
	c.checkTransformed(t)

	// A file the build did not bundle is named, with the way to bundle it.
	emu2 := startEmulator(t, filepath.Join(pkg, "bootstrap"), append(c.env, "SINK_CONFIG=examples/other.toml", "LAMBDA_TASK_ROOT="+pkg))
	body := emu2.invoke(t, []byte(`{}`), 30*time.Second)
	if !strings.Contains(string(body), "CONFIG_FILE=examples/other.toml sam build") {
		t.Fatalf("missing bundled file: %s", body)
	}
}

// TestLambdaConfigFromS3: SINK_CONFIG=s3://bucket/key, read with the
// function's credentials.
func TestLambdaConfigFromS3(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	c := newConfigStand(t)
	file, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "transforms.toml"))
	if err != nil {
		t.Fatal(err)
	}
	c.s3.CreateBucket(t, "team-config")
	if _, err := c.s3.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("team-config"),
		Key: aws.String("sinks/users.toml"), Body: bytes.NewReader(file)}); err != nil {
		t.Fatal(err)
	}
	emu := startEmulator(t, buildBootstrap(t), append(c.env, "SINK_CONFIG=s3://team-config/sinks/users.toml"))
	c.invokeOnce(t, emu)
	c.checkTransformed(t)
	if !emu.logged(`"transforms":["unwrap_envelope","delete_fields","filter_fields","add_fields"]`) {
		t.Fatalf("the configuration line does not list the file's transforms:\n%s", emu.output.String())
	}

	// An edit applies at the next invocation of the same (warm) container; an
	// edit that no longer loads fails every invocation, naming the key, until
	// it is mended; nothing is archived meanwhile under the old version.
	put := func(doc string) {
		if _, err := c.s3.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("team-config"),
			Key: aws.String("sinks/users.toml"), Body: strings.NewReader(doc)}); err != nil {
			t.Fatal(err)
		}
	}
	appendUsers := func(from int) {
		for i := from; i < from+3; i++ {
			payload := fmt.Sprintf(`{"data":{"id":%d,"name":"user-%d"}}`, i, i)
			if _, err := c.broker.Append("app", "users", 0, []byte(payload), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(strings.Replace(string(file), `compression = "gzip"`, `compression = "zstd"`, 1))
	appendUsers(3)
	c.invokeOnce(t, emu)
	if keys := c.keys(t); len(keys) != 2 || !strings.HasSuffix(keys[1], "-00000000000000000005.jsonl.zst") {
		t.Fatalf("after the edit to zstd: objects %v", keys)
	}
	if !emu.logged("the configuration file changed") {
		t.Fatalf("no line says the configuration changed:\n%s", emu.output.String())
	}
	put(strings.Replace(string(file), `compression = "gzip"`, `compression = "brotli"`, 1))
	appendUsers(6)
	for range 2 {
		body := emu.invoke(t, []byte(`{}`), 30*time.Second)
		if !strings.Contains(string(body), "plugin_config.compression") || !strings.Contains(string(body), "brotli") {
			t.Fatalf("invocation with a broken configuration: %s", body)
		}
	}
	if keys := c.keys(t); len(keys) != 2 {
		t.Fatalf("a broken configuration archived under the old one: %v", keys)
	}
	put(string(file))
	c.invokeOnce(t, emu)
	if keys := c.keys(t); len(keys) != 3 || !strings.HasSuffix(keys[2], "-00000000000000000008.jsonl.gz") {
		t.Fatalf("after mending: objects %v", keys)
	}
}

// TestLambdaDisabledAndStartupCheck: enabled = false makes an invocation a
// single log line; a missing bucket fails the invocation at its start.
func TestLambdaDisabledAndStartupCheck(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	c := newConfigStand(t)
	bootstrap := buildBootstrap(t)

	emu := startEmulator(t, bootstrap, append(c.env, "SINK_ENABLED=false", "SINK_STATE_TABLE=not-even-looked-at"))
	for range 2 {
		body := emu.invoke(t, []byte(`{}`), 30*time.Second)
		var sum drain.Summary
		if err := json.Unmarshal(body, &sum); err != nil || sum.Objects != 0 || len(sum.Partitions) != 0 {
			t.Fatalf("disabled invocation: %v: %s", err, body)
		}
	}
	out := emu.await(func(out string) bool { return strings.Count(out, "sink disabled") >= 2 })
	if n := strings.Count(out, "sink disabled"); n != 2 {
		t.Fatalf("%d 'sink disabled' lines for 2 invocations:\n%s", n, emu.output.String())
	}
	if _, ok := c.broker.GroupOffset("app", "users", "iggy-connect-sink-s3", 0); ok {
		t.Fatal("a disabled function committed an offset")
	}
	tables, err := c.moto.DynamoClient(t).ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil || len(tables.TableNames) != 1 {
		t.Fatalf("tables %v, %v", tables.TableNames, err)
	}

	emu = startEmulator(t, bootstrap, append(c.env, "SINK_BUCKET=no-such-bucket", "SINK_MAX_ATTEMPTS=1"))
	body := emu.invoke(t, []byte(`{}`), 30*time.Second)
	var fail struct{ ErrorMessage string }
	if err := json.Unmarshal(body, &fail); err != nil || !strings.Contains(fail.ErrorMessage, `start-up check failed: s3 bucket: bucket "no-such-bucket" does not exist`) {
		t.Fatalf("invocation with a missing bucket: %s", body)
	}
	if _, ok := c.broker.GroupOffset("app", "users", "iggy-connect-sink-s3", 0); ok {
		t.Fatal("the failed invocation committed an offset")
	}
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable/sinktables"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestLeanBootstrapLinksNoIceberg: the bootstrap build-SinkFunction packages
// (-tags noiceberg), and a lean poller, link no Iceberg library, whose initialisers cost every
// cold start about 75 ms of CPU and 60 MB of memory.
func TestLeanBootstrapLinksNoIceberg(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc,noiceberg", ".", "../poller").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list gave %d packages: %s", len(deps), out)
	}
	for _, d := range deps {
		if strings.Contains(d, "iceberg-go") || strings.Contains(d, "substrait") || strings.HasSuffix(d, "/internal/icetable") {
			t.Errorf("the lean bootstrap links %s", d)
		}
	}
}

// TestLambdaHandsOverForIceberg: with table_format = "iceberg", the lean
// bootstrap replaces itself with bootstrap-iceberg before the first
// invocation, which archives and registers the objects in the table (Glue,
// on moto); without bootstrap-iceberg the invocation fails, naming what is
// missing, and archives nothing. A configuration without tables stays in
// the lean build.
func TestLambdaHandsOverForIceberg(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	c := newConfigStand(t)
	bootstrap := buildBootstrap(t)
	ice := append(append([]string{}, c.env...), "SINK_OUTPUT_FORMAT=parquet", "SINK_TABLE_FORMAT=iceberg",
		"SINK_ICEBERG_CATALOG=glue", "AWS_ENDPOINT_URL_GLUE="+c.moto.Endpoint, "AWS_LAMBDA_LOG_FORMAT=JSON")

	// Without the full build: a clear error, nothing archived, no offset.
	lone := filepath.Join(t.TempDir(), "bootstrap")
	if err := os.Link(bootstrap, lone); err != nil {
		t.Fatal(err)
	}
	emu := startEmulator(t, lone, ice)
	body := emu.invoke(t, []byte(`{}`), 30*time.Second)
	var fail struct{ ErrorMessage string }
	if err := json.Unmarshal(body, &fail); err != nil || !strings.Contains(fail.ErrorMessage, sinktables.ErrNoIceberg.Error()) {
		t.Fatalf("invocation of a lone lean bootstrap with tables: %s", body)
	}
	if keys := c.keys(t); len(keys) != 0 {
		t.Fatalf("a failed invocation archived %v", keys)
	}
	if _, ok := c.broker.GroupOffset("app", "users", "iggy-connect-sink-s3", 0); ok {
		t.Fatal("a failed invocation committed an offset")
	}

	emu = startEmulator(t, bootstrap, ice)
	sum := c.invokeOnce(t, emu)
	if len(sum.Partitions) != 1 || sum.Partitions[0].Committed == nil || *sum.Partitions[0].Committed != 2 {
		t.Fatalf("summary %+v", sum)
	}
	for _, want := range []string{`"msg":"handing over to the build with Iceberg"`, `"msg":"iceberg registration"`} {
		if !emu.logged(want) {
			t.Fatalf("no %s line:\n%s", want, emu.output.String())
		}
	}
	reg := emu.await(func(out string) bool { return strings.Contains(out, `"commits":1`) })
	if !strings.Contains(reg, `"commits":1`) || !strings.Contains(reg, `"files":1`) {
		t.Fatalf("the registration committed no file:\n%s", reg)
	}
	if keys := c.keys(t); len(keys) != 1 || !strings.HasSuffix(keys[0], ".parquet") {
		t.Fatalf("archived %v, want one Parquet object", keys)
	}
	meta := 0
	list, err := c.s3.Client(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("archive"), Prefix: aws.String("_iceberg/")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		if strings.HasSuffix(*o.Key, ".metadata.json") {
			meta++
		}
	}
	if meta == 0 {
		t.Fatalf("no table metadata under _iceberg/: %d objects", len(list.Contents))
	}

	// The same package, no tables: the lean build runs it itself.
	plain := startEmulator(t, bootstrap, append(append([]string{}, c.env...), "AWS_LAMBDA_LOG_FORMAT=JSON"))
	plain.invoke(t, []byte(`{}`), 30*time.Second)
	out := plain.await(func(out string) bool { return strings.Contains(out, `"msg":"run finished"`) })
	if !strings.Contains(out, `"msg":"run finished"`) || strings.Contains(out, "handing over") {
		t.Fatalf("the lean bootstrap did not run a configuration without tables itself:\n%s", out)
	}
}

// keys lists the archive's data objects (no markers).
func (c *configStand) keys(t *testing.T) []string {
	t.Helper()
	list, err := c.s3.Client(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("archive")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		if !strings.HasPrefix(*o.Key, "_generations/") && !strings.HasPrefix(*o.Key, "_iceberg/") {
			keys = append(keys, *o.Key)
		}
	}
	return keys
}

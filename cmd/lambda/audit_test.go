package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// s3Requests is a reverse proxy that remembers every request's method and
// path, to show what the audit asked of S3.
type s3Requests struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string
}

func newS3Requests(t *testing.T, target string) *s3Requests {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	r := &s3Requests{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.calls = append(r.calls, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
		r.mu.Unlock()
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *s3Requests) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// TestAuditModeUnderEmulator: the function invoked with {"mode":"audit"}
// (what AuditSchedule sends) checks the archive on MinIO against the state
// and the group, writes AuditGaps/AuditOverlaps, lists but never reads an
// object, and fails the invocation naming a planted overlap.
func TestAuditModeUnderEmulator(t *testing.T) {
	testenv.RequireTool(t, "aws-lambda-rie")
	broker, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	if err := broker.Seed("app", "logs", 4, 800); err != nil {
		t.Fatal(err)
	}
	minio := testenv.StartMinIO(t)
	minio.CreateBucket(t, "audited")
	moto := testenv.StartMoto(t)
	if err := state.NewDynamo(moto.DynamoClient(t), "sink-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := newS3Requests(t, minio.Endpoint)
	emu := startEmulator(t, buildBootstrap(t), []string{
		"AWS_LAMBDA_FUNCTION_NAME=iggy-s3-sink", "AWS_LAMBDA_FUNCTION_TIMEOUT=30", "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + minio.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_S3=" + seen.srv.URL, "AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		"SINK_BUCKET=audited", "SINK_PREFIX=lake", "SINK_STREAM=app", "SINK_TOPICS=logs", "SINK_STATE_TABLE=sink-state",
		"SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=50", "SINK_MAX_FILE_AGE=1ms",
		"IGGY_ADDRESS=" + broker.Addr(),
	})
	if body := emu.invoke(t, []byte(`{}`), 30*time.Second); !strings.Contains(string(body), `"messages":800`) {
		t.Fatalf("drain: %s", body)
	}

	type verdict struct {
		Mode, ErrorMessage string
		OK                 bool `json:"ok"`
		Partitions         int  `json:"partitions"`
		Objects            int  `json:"objects"`
		Overlaps           int  `json:"overlaps"`
		Gaps               int  `json:"unreported_gaps"`
		Reports            []struct {
			Partition    uint32  `json:"partition"`
			StateWritten *uint64 `json:"state_written"`
			Committed    *uint64 `json:"committed"`
		} `json:"reports"`
	}
	audit := func() verdict {
		t.Helper()
		seen.take()
		var v verdict
		body := emu.invoke(t, []byte(`{"mode":"audit"}`), 30*time.Second)
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("audit result: %v: %s", err, body)
		}
		for _, c := range seen.take() {
			// Listing is GET /bucket?list-type=2...; an object read is GET /bucket/key.
			if method, path, _ := strings.Cut(c, " "); method != http.MethodGet || !strings.HasPrefix(path, "/audited?") {
				t.Errorf("the audit made %s; it may only list the bucket", c)
			}
		}
		return v
	}
	clean := audit()
	if clean.Mode != "audit" || !clean.OK || clean.Partitions != 4 || clean.Objects != 16 || len(clean.Reports) != 4 {
		t.Fatalf("clean audit: %+v", clean)
	}
	for _, r := range clean.Reports {
		if r.StateWritten == nil || *r.StateWritten != 199 || r.Committed == nil || *r.Committed != 199 {
			t.Fatalf("partition %d: state written %v, committed %v; want 199 and 199", r.Partition, r.StateWritten, r.Committed)
		}
	}

	// Plant an overlap: an object in partition 2's folder over offsets 40..60.
	client := minio.Client(t)
	list, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("audited"), Prefix: aws.String("lake/")})
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, o := range list.Contents {
		if k := *o.Key; strings.Contains(k, "/00002-") && !strings.Contains(k, "/_generations/") {
			dir = k[:strings.LastIndexByte(k, '/')+1]
		}
	}
	planted := dir + "00002-00000000000000000040-00000000000000000060.jsonl"
	if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("audited"), Key: aws.String(planted), Body: strings.NewReader("{}\n")}); err != nil {
		t.Fatal(err)
	}
	bad := audit()
	if bad.ErrorMessage == "" || !strings.Contains(bad.ErrorMessage, "overlaps") || !strings.Contains(bad.ErrorMessage, planted) ||
		!strings.Contains(bad.ErrorMessage, "app/logs partition 2") {
		t.Fatalf("audit with a planted overlap did not fail naming it: %+v", bad)
	}
	for _, want := range []string{`"AuditOverlaps":0`, `"AuditOverlaps":2`, `"AuditGaps":0`, `"msg":"audit found violations"`} {
		if !emu.logged(want) {
			t.Errorf("the function's output lacks %s", want)
		}
	}
}

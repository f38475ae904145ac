package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyfake"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// pollCount is the message count of a PollMessages request.
func pollCount(req iggyfake.Request) uint32 {
	p := req.Payload
	if len(p) < 5 {
		return 0
	}
	return binary.LittleEndian.Uint32(p[len(p)-5:])
}

// TestMalformedReplyEndsRunWithSummary (issue 15 item 1): a poll reply whose
// user-header length runs past the frame used to panic the SDK's decoder in
// the sink's call goroutine: exit status 2, no summary, leases held. Now the
// run fails cleanly: exit 1, a "run failed" summary naming the command and
// partition, and the leases released (an immediate second run, on a sound
// connection and with 5-minute leases, drains everything).
func TestMalformedReplyEndsRunWithSummary(t *testing.T) {
	st := newStack(t, 300)
	proxy := iggyfake.StartProxy(t, st.broker.Addr(), func(req iggyfake.Request, rep iggyfake.Reply) iggyfake.Reply {
		// Only real reads (not the one-message ownership probe), so that
		// the partitions are leased when the reply arrives.
		if req.Code == iggyfake.CodePollMessages && pollCount(req) > 1 && len(rep.Payload) > 16+64 {
			binary.LittleEndian.PutUint32(rep.Payload[16+48:], 1<<24)
		}
		return rep
	})
	bin := buildPoller(t)
	env := append(append(os.Environ(), st.env...), "SINK_LEASE_DURATION=5m")
	cmd := exec.Command(bin, "once")
	cmd.Env = append(env, "IGGY_ADDRESS="+proxy.Addr(), "IGGY_PROTOCOL=0.8") // the proxy rewrites 0.8 frames
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	logs := stderr.String()
	if code := cmd.ProcessState.ExitCode(); code != 1 || strings.Contains(logs, "panic") || strings.Contains(logs, "goroutine ") {
		t.Fatalf("poller once against a malformed poll reply: exit %d (%v), want 1 without a panic:\n%s", code, err, logs)
	}
	failed := lineWith(logs, `"msg":"run failed"`)
	if !strings.Contains(failed, `"partitions":[`) || !strings.Contains(failed, "malformed reply") ||
		!strings.Contains(failed, "iggy poll app/logs partition ") {
		t.Fatalf("no run summary naming the malformed reply, command and partition:\n%s", logs)
	}

	again := exec.Command(bin, "once")
	again.Env = append(env, "IGGY_ADDRESS="+st.broker.Addr())
	if out, err := again.CombinedOutput(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
	for p := uint32(0); p < 3; p++ {
		if off, ok := st.broker.GroupOffset("app", "logs", "iggy-connect-sink-s3", p); !ok || off != 99 {
			t.Fatalf("partition %d committed %d (%v) after the next run, want 99: its lease was not released", p, off, ok)
		}
	}
}

// stallingHTTP accepts connections and requests and never answers.
func stallingHTTP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})}
	go srv.Serve(ln) //nolint:errcheck // ends at Close
	t.Cleanup(func() { close(hold); srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestStalledServersEndWithinBounds (issue 15 item 4): a DynamoDB that
// accepts requests and never answers, and an Iggy server that stops
// answering after login, used to hang `poller once` until a signal. Each
// now ends within its bound with an error naming the setting.
func TestStalledServersEndWithinBounds(t *testing.T) {
	t.Run("DynamoDB", func(t *testing.T) {
		st := newStack(t, 10)
		st.setenv(t)
		t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", stallingHTTP(t))
		t.Setenv("SINK_AWS_REQUEST_TIMEOUT", "300ms")
		t.Setenv("SINK_AWS_CALL_TIMEOUT", "2s")
		var out, errb bytes.Buffer
		start := time.Now()
		code := runBounded(t, 30*time.Second, []string{"once"}, &out, &errb)
		took := time.Since(start)
		if code != 1 || took > 10*time.Second {
			t.Fatalf("exit %d after %s, want 1 within the call timeout:\n%s", code, took, errb.String())
		}
		if msg := lineWith(errb.String(), "poller: "); !strings.Contains(msg, "aws_call_timeout reached") || !strings.Contains(msg, "DynamoDB") {
			t.Fatalf("error does not name DynamoDB and aws_call_timeout:\n%s", errb.String())
		}
	})
	t.Run("Iggy after login", func(t *testing.T) {
		st := newStack(t, 10)
		st.setenv(t)
		proxy := iggyfake.StartProxy(t, st.broker.Addr(), func(req iggyfake.Request, rep iggyfake.Reply) iggyfake.Reply {
			rep.Stall = req.Code != iggyfake.CodeLoginUser && req.Code != iggyfake.CodeClusterMetadata
			return rep
		})
		t.Setenv("IGGY_ADDRESS", proxy.Addr())
		t.Setenv("IGGY_PROTOCOL", "0.8") // the proxy stalls 0.8 frames
		for _, tc := range []struct {
			env  map[string]string
			want string
		}{
			{map[string]string{"SINK_RUN_TIMEOUT": "2s", "SINK_DEADLINE_MARGIN": "1s", "IGGY_REQUEST_TIMEOUT": "10m"}, "run_timeout reached: the run took 2s"},
			{map[string]string{"IGGY_REQUEST_TIMEOUT": "1s"}, "no reply within 1s (iggy.request_timeout"},
		} {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			start := time.Now()
			code := runBounded(t, 60*time.Second, []string{"once"}, &out, &errb)
			took := time.Since(start)
			if code != 1 || took > 15*time.Second {
				t.Fatalf("%v: exit %d after %s, want 1 within the bound:\n%s", tc.env, code, took, errb.String())
			}
			if failed := lineWith(errb.String(), `"msg":"run failed"`); !strings.Contains(failed, tc.want) {
				t.Fatalf("%v: no run summary naming %s:\n%s", tc.env, tc.want, errb.String())
			}
		}
	})
}

// runBounded runs the poller in-process and fails the test, instead of
// hanging it, when the run outlives limit.
func runBounded(t *testing.T, limit time.Duration, args []string, out, errb *bytes.Buffer) int {
	t.Helper()
	var o, e testenv.LockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(args, strings.NewReader(""), &o, &e) }()
	select {
	case code := <-done:
		out.WriteString(o.String())
		errb.WriteString(e.String())
		return code
	case <-time.After(limit):
		t.Fatalf("poller %v still running after %s:\n%s", args, limit, e.String())
		return -1
	}
}

// TestEndpointCredentialsNeverLogged (issue 15 item 9): credentials in the
// endpoint URL used to appear verbatim in the configuration line; they are
// in no log line or error, whether S3 answers or not.
func TestEndpointCredentialsNeverLogged(t *testing.T) {
	st := newStack(t, 30)
	st.setenv(t)
	const secret = "URL-SECRET-8842"
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, endpoint string
		code           int
	}{
		{"S3 answers", strings.Replace(st.s3.Endpoint, "://", "://user:"+secret+"@", 1), 0},
		{"S3 unreachable", "http://user:" + secret + "@" + closed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := st.broker.Seed("app", "logs", 3, 30); err != nil { // work for this run
				t.Fatal(err)
			}
			t.Setenv("SINK_ENDPOINT", tc.endpoint)
			t.Setenv("SINK_MAX_ATTEMPTS", "1")
			var out, errb bytes.Buffer
			code := runBounded(t, 60*time.Second, []string{"once"}, &out, &errb)
			logs := out.String() + errb.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, logs)
			}
			if strings.Contains(logs, secret) {
				t.Fatalf("the endpoint's password appears in the output:\n%s", logs)
			}
			if !strings.Contains(logs, `"plugin_config.endpoint":"http://[redacted]@`) {
				t.Fatalf("the configuration line does not show the redacted endpoint:\n%s", logs)
			}
		})
	}
}

// TestTopicsResolvedOnce (issue 15 item 5, issue 10 case 2): a topic given
// by name and again by its id is refused before anything is written, naming
// both; a topic given by id is archived under its name, in keys and records;
// ids whose names render to the same key segment are refused too.
func TestTopicsResolvedOnce(t *testing.T) {
	st := newStack(t, 0)                                             // topic "logs" is id 0
	for _, name := range []string{"a_b", "orders v2", "orders_v2"} { // ids 1, 2, 3
		if err := st.broker.Seed("app", name, 1, 5); err != nil {
			t.Fatal(err)
		}
	}
	st.setenv(t)
	for _, tc := range []struct{ topics, want string }{
		{"a_b,1", `topic "a_b" and stream "app" topic id 1 are the same topic, "a_b" (id 1)`},
		{"orders v2,3", `stream "app" topic "orders v2" and stream "app" topic "orders_v2" would be written under the same keys`},
	} {
		t.Setenv("SINK_TOPICS", tc.topics)
		var out, errb bytes.Buffer
		// The error is in a JSON log line: its quotes are escaped.
		if code := runBounded(t, 60*time.Second, []string{"once"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), strings.ReplaceAll(tc.want, `"`, `\"`)) {
			t.Fatalf("SINK_TOPICS=%s: exit %d, want 1 and an error saying %s:\n%s", tc.topics, code, tc.want, errb.String())
		}
		if keys := listKeys(t, st, "p/"); len(keys) != 0 {
			t.Fatalf("SINK_TOPICS=%s: objects written: %v", tc.topics, keys)
		}
	}

	t.Setenv("SINK_TOPICS", "1")
	t.Setenv("SINK_STREAM", "0")
	t.Setenv("SINK_MAX_MESSAGES_PER_FILE", "5")
	var out, errb bytes.Buffer
	if code := runBounded(t, 60*time.Second, []string{"once"}, &out, &errb); code != 0 {
		t.Fatalf("stream 0 topic 1: exit %d:\n%s", code, errb.String())
	}
	keys := listKeys(t, st, "p/")
	if len(keys) != 1 || !strings.HasPrefix(keys[0], "p/app/a_b/") {
		t.Fatalf("objects %v, want one under p/app/a_b/ (names, not ids)", keys)
	}
	body := getObject(t, st, keys[0])
	if !bytes.Contains(body, []byte(`"stream":"app","topic":"a_b"`)) {
		t.Fatalf("records do not carry the resolved names:\n%s", body)
	}
}

// listKeys lists the keys under prefix but the generation and name markers
// (under p/_generations/, which allKeys lists too).
func listKeys(t *testing.T, st *stack, prefix string) []string {
	t.Helper()
	var keys []string
	for _, k := range allKeys(t, st, prefix) {
		if !strings.HasPrefix(k, "p/_generations/") {
			keys = append(keys, k)
		}
	}
	return keys
}

func allKeys(t *testing.T, st *stack, prefix string) []string {
	t.Helper()
	out, err := st.s3.Client(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("poller"), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

func getObject(t *testing.T, st *stack, key string) []byte {
	t.Helper()
	out, err := st.s3.Client(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("poller"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamNamedDotDotStaysUnderPrefix (issue 15 item 3): a stream named
// ".." used to give keys "p/../t/...", which versitygw stores at the bucket
// root, outside the prefix an IAM policy allows; its objects now sit under
// p/__/.
func TestStreamNamedDotDotStaysUnderPrefix(t *testing.T) {
	st := newStack(t, 0)
	if err := st.broker.Seed("..", "t", 1, 5); err != nil {
		t.Fatal(err)
	}
	st.setenv(t)
	t.Setenv("SINK_STREAM", "..")
	t.Setenv("SINK_TOPICS", "t")
	t.Setenv("SINK_MAX_MESSAGES_PER_FILE", "5")
	var out, errb bytes.Buffer
	if code := runBounded(t, 60*time.Second, []string{"once"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	if all := listKeys(t, st, ""); len(all) != 1 || !strings.HasPrefix(all[0], "p/__/t/") {
		t.Fatalf("objects in the bucket: %v, want one under p/__/t/", all)
	}
	for _, k := range allKeys(t, st, "") {
		if !strings.HasPrefix(k, "p/") || strings.Contains(k, "/../") {
			t.Fatalf("key %q is outside the prefix", k)
		}
	}
}

// lineWith returns the first line of logs holding marker ("" if none).
func lineWith(logs, marker string) string {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, marker) {
			return l
		}
	}
	return ""
}

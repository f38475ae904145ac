package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestRefusedLoginNamesTheSettings (issue 41): a wrong Iggy password fails
// every command that logs in with a message naming the settings that hold
// the credentials, and never the password.
func TestRefusedLoginNamesTheSettings(t *testing.T) {
	st := newStack(t, 10)
	st.setenv(t)
	const password = "not-the-password-41"
	t.Setenv("IGGY_PASSWORD", password)
	const want = "fix iggy.username / iggy.password (IGGY_USERNAME / IGGY_PASSWORD)"
	for _, tc := range []struct {
		cmd  string
		line string // the line of stderr that carries the error
	}{
		{"check", "poller check: failed: iggy:"},
		{"audit", "poller audit:"},
		{"status", "poller status:"},
		{"once", `"msg":"run failed"`},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{tc.cmd, "-log-format", "json"}, nil, &out, &errb); code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, errb.String())
			}
			line := strings.ReplaceAll(lineWith(errb.String(), tc.line), `\"`, `"`) // JSON's quotes
			if !strings.Contains(line, want) || !strings.Contains(line, `as user "iggy"`) {
				t.Fatalf("no line %q names the settings (%s):\n%s", tc.line, want, errb.String())
			}
			if strings.Contains(out.String()+errb.String(), password) {
				t.Fatalf("the password is shown:\n%s\n%s", out.String(), errb.String())
			}
		})
	}
	t.Run("run", func(t *testing.T) {
		bin := buildPoller(t)
		cmd := exec.Command(bin, "run", "-interval", "1s", "-log-format", "json")
		cmd.Env = os.Environ()
		logs := &testenv.LockedBuffer{}
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool { return strings.Contains(logs.String(), "IGGY_PASSWORD") })
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("poller run did not exit 0 on SIGTERM: %v\n%s", err, logs.String())
		}
		if line := lineWith(logs.String(), `"msg":"run failed"`); !strings.Contains(line, want) || strings.Contains(logs.String(), password) {
			t.Fatalf("run's failure does not name the settings, or shows the password:\n%s", logs.String())
		}
	})
}

// TestMissingBucketExplained (issue 41): every command that touches a
// missing bucket says what check says — the bucket, where, and the setting
// to fix — not the SDK's text. status reads only Iggy, so a missing bucket
// does not fail it.
func TestMissingBucketExplained(t *testing.T) {
	st := newStack(t, 10)
	st.setenv(t)
	t.Setenv("SINK_BUCKET", "no-such-bucket")
	want := `bucket "no-such-bucket" does not exist at endpoint ` + st.s3.Endpoint + ": create it, or fix plugin_config.bucket (SINK_BUCKET)"
	for _, tc := range []struct{ cmd, line string }{
		{"check", "poller check: failed: s3 bucket:"},
		{"audit", "poller audit:"},
		{"once", "poller: start-up check failed:"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{tc.cmd}, nil, &out, &errb); code != 1 {
				t.Fatalf("exit %d, want 1:\n%s\n%s", code, out.String(), errb.String())
			}
			if line := lineWith(errb.String(), tc.line); !strings.Contains(line, want) {
				t.Fatalf("no line %q says %q:\n%s", tc.line, want, errb.String())
			}
			if strings.Contains(errb.String(), "upload:") || strings.Contains(errb.String(), "api error") {
				t.Fatalf("the SDK's text is shown:\n%s", errb.String())
			}
		})
	}
	t.Run("status", func(t *testing.T) {
		var out, errb bytes.Buffer
		if code := run([]string{"status"}, nil, &out, &errb); code != 0 {
			t.Fatalf("status reads no bucket, yet exit %d:\n%s", code, errb.String())
		}
		if n := strings.Count(out.String(), "app/logs"); n != 3 {
			t.Fatalf("status shows %d partitions, want 3:\n%s", n, out.String())
		}
	})
}

// forwardProxy is an HTTP forward proxy (HTTP_PROXY) that sends every
// request, whatever host it names, to target, keeping the Host header; it
// counts what it forwarded.
func forwardProxy(t *testing.T, target string) (proxyURL string, forwarded *atomic.Int64) {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	forwarded = &atomic.Int64{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		forwarded.Add(1)
		r.SetURL(to)
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, forwarded
}

// TestStateTableOnAWS (issue 41): `poller once` with a typo in state_table
// used to create a second table and exit 0. Against AWS it now refuses,
// naming the table, where, the tables of similar names, and the fixes;
// -create-table creates it. At a local endpoint (moto's) it creates it,
// with a warning. "AWS" here is moto behind a forward proxy, reached
// through the AWS-shaped endpoint http://dynamodb.us-east-1.amazonaws.com:
// the sink classifies the endpoint by its name, and its requests really
// reach a DynamoDB.
func TestStateTableOnAWS(t *testing.T) {
	st := newStack(t, 10)
	if err := state.NewDynamo(st.moto.DynamoClient(t), "sink-state", nil).EnsureTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	proxy, forwarded := forwardProxy(t, st.moto.Endpoint)
	const awsEndpoint = "http://dynamodb.us-east-1.amazonaws.com"
	bin := buildPoller(t)
	once := func(t *testing.T, table, endpoint string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"once", "-log-format", "json"}, args...)...)
		cmd.Env = append(append(os.Environ(), st.env...), "SINK_STATE_TABLE="+table, "AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
			"HTTP_PROXY="+proxy, "http_proxy="+proxy, "NO_PROXY=", "no_proxy=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	exists := func(table string) bool {
		return state.NewDynamo(st.moto.DynamoClient(t), table, nil).Check(context.Background()) == nil
	}

	out, err := once(t, "sink-stat", awsEndpoint)
	if code := exitCode(err); code != 1 {
		t.Fatalf("once with a missing table on AWS: exit %d, want 1:\n%s", code, out)
	}
	if forwarded.Load() == 0 {
		t.Fatalf("no request went through the proxy to moto:\n%s", out)
	}
	for _, want := range []string{`table "sink-stat" does not exist at endpoint ` + awsEndpoint + " (AWS_ENDPOINT_URL_DYNAMODB)",
		`tables of similar names there: "sink-state"`, "deploy the template", "plugin_config.state_table (SINK_STATE_TABLE)",
		"pass -create-table to poller once or run"} {
		if !strings.Contains(lineWith(out, "poller: "), want) {
			t.Errorf("the refusal lacks %q:\n%s", want, out)
		}
	}
	if exists("sink-stat") {
		t.Fatal("the refusal created the table")
	}

	out, err = once(t, "sink-stat", awsEndpoint, "-create-table")
	if err != nil || !exists("sink-stat") || !strings.Contains(lineWith(out, `"level":"WARN"`), "creating it, as asked (-create-table)") {
		t.Fatalf("once -create-table: %v, table created: %v:\n%s", err, exists("sink-stat"), out)
	}

	out, err = once(t, "fresh-local", st.moto.Endpoint)
	if err != nil || !exists("fresh-local") || !strings.Contains(lineWith(out, `"level":"WARN"`), "a local stand-in") {
		t.Fatalf("once at a local endpoint: %v, table created: %v:\n%s", err, exists("fresh-local"), out)
	}
}

// exitCode is a finished command's exit status (0 for a nil error).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// TestStalledSecretsManagerEndsWithinCallTimeout (issue 15 item 4): a
// Secrets Manager that accepts the request and never answers ends the
// setup at aws_call_timeout, with an error naming the service and setting.
func TestStalledSecretsManagerEndsWithinCallTimeout(t *testing.T) {
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
	defer srv.Close()
	defer close(hold)
	t.Setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", "http://"+ln.Addr().String())
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t",
		"IGGY_CREDENTIALS_SECRET": "prod/iggy", "SINK_AWS_REQUEST_TIMEOUT": "10s", "SINK_AWS_CALL_TIMEOUT": "1s"}
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = New(context.Background(), cfg, Options{State: state.NewMemory(nil)})
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("setup took %s with aws_call_timeout 1s", took)
	}
	if !errors.Is(err, ErrCallTimeout) || !strings.Contains(err.Error(), "Secrets Manager") || !strings.Contains(err.Error(), "aws_call_timeout") {
		t.Fatalf("New = %v, want ErrCallTimeout naming Secrets Manager and aws_call_timeout", err)
	}
}

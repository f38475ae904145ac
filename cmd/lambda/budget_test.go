package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestDeadlineMarginAboveFunctionTimeoutRefused (issue 15 item 6): a
// deadline_margin that leaves no time in the function's timeout made every
// invocation "finish" with 0 objects; it is refused at the first
// invocation with an error naming the setting, before any remote call.
func TestDeadlineMarginAboveFunctionTimeoutRefused(t *testing.T) {
	// Nothing listens there: a remote call would fail with another error.
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, tc := range []struct {
		name     string
		env      map[string]string
		deadline time.Duration
		want     string
	}{
		{"from the invocation's deadline", map[string]string{"SINK_DEADLINE_MARGIN": "10s"}, 12 * time.Second, "timeout is 12s"},
		{"from AWS_LAMBDA_FUNCTION_TIMEOUT", map[string]string{"SINK_DEADLINE_MARGIN": "20s", "AWS_LAMBDA_FUNCTION_TIMEOUT": "25"}, time.Minute, "timeout is 25s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t", "IGGY_ADDRESS": "127.0.0.1:1"}
			for k, v := range tc.env {
				env[k] = v
			}
			h := &handler{log: slog.New(slog.DiscardHandler), metrics: io.Discard, env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			_, err := h.Handle(ctx, nil)
			if err == nil || !strings.Contains(err.Error(), "deadline_margin") || !strings.Contains(err.Error(), "SINK_DEADLINE_MARGIN") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Invoke = %v, want a refusal naming deadline_margin and saying %q", err, tc.want)
			}
		})
	}
	// A margin that leaves time passes the check (and then fails on the
	// unreachable DynamoDB: a different error).
	env := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t", "SINK_AWS_CALL_TIMEOUT": "2s"}
	h := &handler{log: slog.New(slog.DiscardHandler), metrics: io.Discard, env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.Handle(ctx, nil); err == nil || strings.Contains(err.Error(), "deadline_margin") {
		t.Fatalf("a 10s margin in a 30s function: %v", err)
	}
}

package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// statusErr builds the error chain the SDK returns for an HTTP error reply.
func statusErr(status int, code string) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code, Message: "m"},
		},
	}}
}

func sendErr(err error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &smithyhttp.RequestSendError{Err: err}}
}

type timeoutErr struct{}

// Is mimics net/http's timeout errors, which match context.DeadlineExceeded.
func (timeoutErr) Is(err error) bool { return err == context.DeadlineExceeded }

func (timeoutErr) Error() string   { return "net/http: timeout awaiting response headers" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"500", statusErr(500, "InternalError"), true},
		{"502", statusErr(502, "BadGateway"), true},
		{"503 SlowDown", statusErr(503, "SlowDown"), true},
		{"408", statusErr(408, "RequestTimeout"), true},
		{"429", statusErr(429, "TooManyRequests"), true},
		{"400", statusErr(400, "InvalidArgument"), false},
		{"400 RequestTimeout is still a 400", statusErr(400, "RequestTimeout"), false},
		{"403", statusErr(403, "AccessDenied"), false},
		{"403 signature", statusErr(403, "SignatureDoesNotMatch"), false},
		{"404", statusErr(404, "NoSuchBucket"), false},
		{"409", statusErr(409, "OperationAborted"), false},
		{"412", statusErr(412, "PreconditionFailed"), false},
		{"409 conditional write in flight", statusErr(409, "ConditionalRequestConflict"), true},
		{"2xx without ETag", &badReplyError{status: 200, problem: "it has no ETag"}, true},
		{"connection reset", sendErr(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"bare ECONNRESET", fmt.Errorf("x: %w", syscall.ECONNRESET), true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), true},
		{"connection refused", sendErr(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"EOF", sendErr(io.EOF), true},
		{"unexpected EOF reading body", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), true},
		{"header timeout", sendErr(timeoutErr{}), true},
		{"api code without status", &smithy.GenericAPIError{Code: "SlowDown"}, true},
		{"other api code without status", &smithy.GenericAPIError{Code: "AccessDenied"}, false},
		{"caller cancelled", sendErr(context.Canceled), false},
		{"caller deadline", sendErr(context.DeadlineExceeded), false},
		{"caller deadline joined", errors.Join(errors.New("x"), fmt.Errorf("y: %w", context.DeadlineExceeded)), false},
		{"plain error", errors.New("bad key"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Retryable(tt.err); got != tt.want {
				t.Fatalf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestBackoffSchedule(t *testing.T) {
	base, ceiling := 100*time.Millisecond, time.Second
	tests := []struct {
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{1, 0.5, 100 * time.Millisecond}, // jitter factor 1.0
		{2, 0.5, 200 * time.Millisecond},
		{3, 0.5, 400 * time.Millisecond},
		{4, 0.5, 800 * time.Millisecond},
		{5, 0.5, time.Second}, // capped
		{40, 0.5, time.Second},
		{1, 0, 80 * time.Millisecond}, // −20%
		{1, 1, 120 * time.Millisecond},
		{5, 0, 800 * time.Millisecond},
		{5, 1, 1200 * time.Millisecond}, // jitter applies after the cap
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("attempt%d_rnd%v", tt.attempt, tt.rnd), func(t *testing.T) {
			got := backoff(base, ceiling, tt.attempt, func() float64 { return tt.rnd })
			if diff := got - tt.want; diff < -time.Microsecond || diff > time.Microsecond {
				t.Fatalf("backoff = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorNamesWhatFailed(t *testing.T) {
	inner := statusErr(403, "AccessDenied")
	err := error(&Error{Op: "PutObject", Bucket: "archive", Key: "iggy/a.jsonl", Status: 403, Attempts: 1, Err: inner})
	msg := err.Error()
	for _, want := range []string{"PutObject", "s3://archive/iggy/a.jsonl", "HTTP 403", "1 attempt"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDenied" {
		t.Fatalf("Unwrap does not reach the API error")
	}
	part := (&Error{Op: "UploadPart", Bucket: "b", Key: "k", Part: 7, Status: 500, Attempts: 8, Err: io.EOF}).Error()
	if !strings.Contains(part, "UploadPart (part 7) s3://b/k") {
		t.Fatalf("error %q should name the part", part)
	}
	noReply := (&Error{Op: "GetObject", Bucket: "b", Key: "k", Attempts: 3, Err: io.EOF}).Error()
	if !strings.Contains(noReply, "no HTTP reply") || !strings.Contains(noReply, "3 attempt") {
		t.Fatalf("error %q should say no reply came and 3 attempts", noReply)
	}
}

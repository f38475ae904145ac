package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Error is an S3 operation that failed for good: not retryable, or still
// failing after the last attempt. It never carries credentials.
type Error struct {
	Op       string // S3 operation, e.g. "PutObject"
	Bucket   string
	Key      string // the object key (the prefix, for ListObjectsV2)
	Part     int    // part number, for UploadPart
	Status   int    // HTTP status of the last reply; 0 when none arrived
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	target := "s3://" + e.Bucket + "/" + e.Key
	status := "no HTTP reply"
	if e.Status != 0 {
		status = fmt.Sprintf("HTTP %d", e.Status)
	}
	op := e.Op
	if e.Part > 0 {
		op = fmt.Sprintf("%s (part %d)", e.Op, e.Part)
	}
	return fmt.Sprintf("upload: %s %s failed after %d attempt(s) (%s): %v", op, target, e.Attempts, status, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether err is transient: a network failure (reset, EOF,
// timeout), HTTP 5xx, 408, 429, a 409 ConditionalRequestConflict, a body
// refused for not matching its checksum (BadDigest and kin), or a 2xx reply
// that does not prove the upload (no ETag, not the checksum or MD5 sent). Client errors (400, 403, 404, ...) and the
// caller's own cancellation are final.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	// net/http's own timeouts claim to be context.DeadlineExceeded (via an
	// Is method), so only the sentinel itself marks the caller's deadline.
	if errors.Is(err, context.Canceled) || holds(err, context.DeadlineExceeded) || errors.Is(err, ErrGateFailed) {
		return false
	}
	var bad *badReplyError
	if errors.As(err, &bad) {
		return true // a 2xx that proves nothing: the store may not have the bytes
	}
	// 409 ConditionalRequestConflict: another conditional write of the key
	// was in flight; the retry meets its outcome (412 and a comparison).
	if isCode(err, "ConditionalRequestConflict") {
		return true
	}
	// The store refused a body that did not match its checksum: bytes
	// changed on the way; the same bytes sent again may arrive whole.
	if checksumMismatch(err) {
		return true
	}
	if status := httpStatus(err); status != 0 {
		// 501: the store lacks the operation, and will on a retry too.
		return (status >= 500 && status != 501) || status == 408 || status == 429
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "RequestTimeout", "SlowDown", "InternalError", "ServiceUnavailable", "Throttling", "ThrottlingException":
			return true
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	// The SDK wraps every failure to send or to get a reply, including
	// net/http's "timeout awaiting response headers", in RequestSendError.
	var sendErr *smithyhttp.RequestSendError
	return errors.As(err, &sendErr)
}

// holds reports whether target itself (not something that claims to match
// it) is in err's chain.
func holds(err, target error) bool {
	for err != nil {
		if err == target {
			return true
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if holds(e, target) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// httpStatus returns the HTTP status carried by an SDK error, or 0.
func httpStatus(err error) int {
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) {
		return respErr.HTTPStatusCode()
	}
	var bad *badReplyError
	if errors.As(err, &bad) {
		return bad.status
	}
	return 0
}

// backoff returns the delay before retry number attempt (1 = after the first
// failure): jitter(min(base·2^(attempt−1), ceiling)), jitter ±20% uniform.
func backoff(base, ceiling time.Duration, attempt int, rnd func() float64) time.Duration {
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	return time.Duration(float64(d) * (0.8 + 0.4*rnd()))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// counter accumulates the attempts of all requests of one Put or Stream.
type counter struct {
	attempts, retries int
}

// retryPolicy runs the requests to one bucket with the retry policy of
// Options: how many attempts, the backoff between them, and where each
// retry is logged.
type retryPolicy struct {
	bucket          string
	maxAttempts     int
	delay, maxDelay time.Duration // Options.RetryDelay, MaxRetryDelay
	sleep           func(ctx context.Context, d time.Duration) error
	log             *slog.Logger
}

// retryPolicyOf is the policy of o, whose zero fields New has filled in.
func retryPolicyOf(o Options) retryPolicy {
	return retryPolicy{bucket: o.Bucket, maxAttempts: o.MaxAttempts, delay: o.RetryDelay,
		maxDelay: o.MaxRetryDelay, sleep: o.Sleep, log: o.Logger}
}

// do runs op until it succeeds, fails for good, or MaxAttempts is reached,
// sleeping the backoff between attempts and logging each retry.
func (p retryPolicy) do(ctx context.Context, c *counter, opName, key string, op func(ctx context.Context) error) error {
	var err error
	attempt := 0
	for attempt < p.maxAttempts {
		attempt++
		c.attempts++
		if attempt > 1 {
			c.retries++
		}
		err = op(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !Retryable(err) || attempt == p.maxAttempts {
			break
		}
		delay := backoff(p.delay, p.maxDelay, attempt, rand.Float64)
		p.log.WarnContext(ctx, "s3 request failed, retrying",
			"op", opName, "bucket", p.bucket, "key", key, "attempt", attempt,
			"max_attempts", p.maxAttempts, "status", httpStatus(err), "delay", delay, "error", err)
		if serr := p.sleep(ctx, delay); serr != nil {
			err = errors.Join(err, serr)
			break
		}
	}
	return &Error{Op: opName, Bucket: p.bucket, Key: key, Status: httpStatus(err), Attempts: attempt, Err: err}
}

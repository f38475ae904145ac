package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go/middleware"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/redact"
)

// ErrRunTimeout is the cause of a run cut at run_timeout.
var ErrRunTimeout = errors.New("run_timeout reached")

// ErrCallTimeout is the cause of an AWS call cut at aws_call_timeout.
var ErrCallTimeout = errors.New("aws_call_timeout reached")

// withRunTimeout bounds one run by run_timeout; a caller's shorter deadline
// (the Lambda's) still applies. Calls cut by it say so (context.Cause).
func withRunTimeout(ctx context.Context, p *config.Plugin) (context.Context, context.CancelFunc) {
	if p.RunTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, p.RunTimeout,
		fmt.Errorf("%w: the run took %s (plugin_config.run_timeout / SINK_RUN_TIMEOUT)", ErrRunTimeout, p.RunTimeout))
}

// awsHTTPClient is the HTTP client of the DynamoDB and Secrets Manager
// clients: a server that accepts a request and never answers fails the
// attempt after aws_request_timeout (the SDK then retries) instead of
// holding it forever.
func awsHTTPClient(p *config.Plugin) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.ResponseHeaderTimeout = p.AWSRequestTimeout
	})
}

// callTimeout bounds a whole AWS operation, retries included, by d. It is
// added to a client's APIOptions.
func callTimeout(service string, d time.Duration) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("IggySinkCallTimeout",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				cause := fmt.Errorf("%w: no answer from %s within %s (plugin_config.aws_call_timeout / SINK_AWS_CALL_TIMEOUT)", ErrCallTimeout, service, d)
				ctx, cancel := context.WithTimeoutCause(ctx, d, cause)
				defer cancel()
				out, md, err := next.HandleInitialize(ctx, in)
				if err != nil && errors.Is(context.Cause(ctx), ErrCallTimeout) && !errors.Is(err, ErrCallTimeout) {
					err = fmt.Errorf("%w: %w", cause, err)
				}
				return out, md, err
			}), middleware.Before)
	}
}

// s3Endpoint is the endpoint handed to the S3 client: without userinfo,
// which the client never sends (requests are signed with the access keys)
// but would quote in its errors.
func s3Endpoint(endpoint string, log *slog.Logger) string {
	clean, had := redact.StripUserinfo(endpoint)
	if had {
		log.Warn("plugin_config.endpoint holds user:password@, which S3 requests never use (they are signed with access_key_id and secret_access_key); it is ignored",
			"endpoint", clean)
	}
	return clean
}

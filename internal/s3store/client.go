package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// DefaultResponseHeaderTimeout turns a server that accepted a request but
// never answers into a retryable timeout.
const DefaultResponseHeaderTimeout = 30 * time.Second

// ClientOptions describe how to reach the store.
type ClientOptions struct {
	// Region; "auto" (Cloudflare R2) needs Endpoint. Empty: AWS_REGION etc.
	Region string
	// Endpoint of an S3-compatible store, e.g. http://127.0.0.1:7070.
	Endpoint string
	// PathStyle forces path-style (true) or virtual-hosted (false)
	// addressing; nil means on exactly when an endpoint is set (here or by
	// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL).
	PathStyle *bool
	// AccessKeyID and SecretAccessKey are used together or not at all;
	// without them the SDK default chain (environment, shared files,
	// container or instance role) supplies credentials.
	AccessKeyID, SecretAccessKey string
	// ResponseHeaderTimeout, default 30s; ignored when HTTPClient is set.
	ResponseHeaderTimeout time.Duration
	// HTTPClient replaces the SDK's client (its timeouts are then the
	// caller's business).
	HTTPClient *http.Client
	// SignPayload: false sends UNSIGNED-PAYLOAD on every request. nil
	// (the default) and true leave the choice to the SDK, which for
	// PutObject and UploadPart signs the SHA-256 of the body over plain
	// HTTP only: over HTTPS, TLS protects the body on the way and the
	// uploader's CRC32C proves what the store took, sparing a SHA-256 pass
	// over every byte. nil means false over HTTPS.
	SignPayload *bool
}

// NewClient builds an S3 client for the Uploader: SDK retries off (the
// Uploader retries and counts attempts itself), checksums only where an
// operation requires them, credentials in the upstream connector's order.
func NewClient(ctx context.Context, o ClientOptions) (*s3.Client, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	timeout := o.ResponseHeaderTimeout
	if timeout == 0 {
		timeout = DefaultResponseHeaderTimeout
	}

	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	if o.AccessKeyID != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, "")))
	}
	if o.HTTPClient != nil {
		loadOpts = append(loadOpts, config.WithHTTPClient(o.HTTPClient))
	} else {
		loadOpts = append(loadOpts, config.WithHTTPClient(awshttp.NewBuildableClient().
			WithTransportOptions(transportOptions(timeout))))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("upload: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("upload: no region: set region (or AWS_REGION)")
	}
	pathStyle := o.Endpoint != "" || envEndpoint() != ""
	if o.PathStyle != nil {
		pathStyle = *o.PathStyle
	}
	sign := !overTLS(o.Endpoint)
	if o.SignPayload != nil {
		sign = *o.SignPayload
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = pathStyle
		if !sign {
			so.APIOptions = append(so.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
		}
	}), nil
}

// RegionAuto is Cloudflare R2's region, which only an endpoint locates.
const RegionAuto = "auto"

// check refuses options no client can be made from.
func (o ClientOptions) check() error {
	if (o.AccessKeyID == "") != (o.SecretAccessKey == "") {
		return errors.New("upload: access_key_id and secret_access_key must be set together (one is empty)")
	}
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("upload: endpoint %q: want an http:// or https:// URL with a host", o.Endpoint)
		}
	}
	if o.Region == RegionAuto && o.Endpoint == "" && envEndpoint() == "" {
		return errors.New(`upload: region "auto" needs an endpoint (it is Cloudflare R2's region)`)
	}
	if o.ResponseHeaderTimeout < 0 {
		return fmt.Errorf("upload: response header timeout %s: must not be negative", o.ResponseHeaderTimeout)
	}
	return nil
}

// transportOptions set up the SDK's HTTP transport: the response header
// timeout, connections that take a body from its own memory, and room to
// keep the connections of a run's concurrent PUTs (its partitions', and
// the value objects of each one's unit) for the next ones, where the SDK's
// default keeps 10 and dials (and, over TLS, handshakes) the rest again.
func transportOptions(responseHeaderTimeout time.Duration) func(*http.Transport) {
	return func(tr *http.Transport) {
		tr.ResponseHeaderTimeout = responseHeaderTimeout
		tr.DialContext = dialBodyConn(tr.DialContext)
		tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, idleConnsPerHost)
		if tr.MaxIdleConns != 0 {
			tr.MaxIdleConns = max(tr.MaxIdleConns, idleConnsPerHost)
		}
	}
}

// idleConnsPerHost is how many idle connections to the store are kept.
const idleConnsPerHost = 64

// overTLS reports whether requests go over HTTPS: to endpoint, or to the
// one the environment names, or to AWS's own (always HTTPS).
func overTLS(endpoint string) bool {
	if endpoint == "" {
		endpoint = envEndpoint()
	}
	return endpoint == "" || strings.HasPrefix(strings.ToLower(endpoint), "https://")
}

func envEndpoint() string {
	if v := os.Getenv("AWS_ENDPOINT_URL_S3"); v != "" {
		return v
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

// Package s3store is the sink's S3 client: writes with bounded, logged retries,
// streamed multipart uploads aborted on failure, listing and reading.
//
// Retries: every request gets Options.MaxAttempts attempts in total; only
// transient failures (network errors, HTTP 5xx, 408, 429; see Retryable) are
// retried, after jitter(min(RetryDelay·2^(n−1), MaxRetryDelay)) with ±20%
// uniform jitter — the upstream connector's policy. The SDK's own retryer is
// off (NewClient), so attempts are counted and logged here, and a 403 fails
// at once. A stalled server becomes a retryable timeout through the HTTP
// transport's ResponseHeaderTimeout.
//
// Idempotence: an object's key is derived from its offset range and its bytes
// from that range, so re-sending a request (or a whole upload) writes the same
// object again. A CompleteMultipartUpload whose reply was lost and whose retry
// finds the upload gone (NoSuchUpload) is accepted when the object exists
// with the uploaded size.
//
// Checksums: NewClient sets RequestChecksumCalculation and
// ResponseChecksumValidation to WhenRequired, so the SDK adds no
// x-amz-checksum-* / aws-chunked trailers the store may not know. What stores
// need:
//   - AWS S3: either setting works; SigV4 over the payload hash (http) or
//     TLS (https) protects the body.
//   - versitygw (tests) and MinIO: accept both WhenSupported (CRC32) and
//     WhenRequired.
//   - Cloudflare R2: region "auto" with its endpoint; R2 has rejected the
//     x-amz-checksum-* headers and aws-chunked trailers that the SDK sends by
//     default since 2025 — WhenRequired sends none.
//   - Backblaze B2 (S3 API): lists x-amz-checksum-* and
//     x-amz-sdk-checksum-algorithm as unsupported (InvalidArgument
//     "Unsupported header") — WhenRequired is required there.
//   - Do not use feature/s3/transfermanager against these stores: it adds
//     CRC32 trailers whatever this setting says (aws-sdk-go-v2 issue 3469).
//
// Server-side encryption: "AES256" or "aws:kms" (with an optional key id) is
// sent on PutObject and CreateMultipartUpload; S3-compatible stores that do
// not support SSE reject or ignore the header.
//
// Memory: Put holds the caller's slice; Stream holds at most two parts
// (2 × PartSize) however large the object, and sends a body that fits in one
// part as a single PutObject.
package s3store

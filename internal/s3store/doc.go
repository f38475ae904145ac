// Package s3store is the sink's S3 client: create-only, verified writes with
// bounded, logged retries, streamed multipart uploads, existence checks, listing and reading.
//
// Retries: every request gets Options.MaxAttempts attempts in total; only
// transient failures (network errors, HTTP 5xx, 408, 429; see Retryable) are
// retried, after jitter(min(RetryDelay·2^(n−1), MaxRetryDelay)) with ±20%
// uniform jitter — the upstream connector's policy. The SDK's own retryer is
// off (NewClient), so attempts are counted and logged here, and a 403 fails
// at once. A stalled server becomes a retryable timeout through the HTTP
// transport's ResponseHeaderTimeout.
//
// Create-only writes: every PutObject and CompleteMultipartUpload carries
// If-None-Match: *, so a key is written at most once and a stale writer
// cannot replace an object. When a write meets an existing object — a 412,
// a retried Complete whose upload is gone (the earlier attempt completed it
// and the reply was lost), a retried PUT after a lost reply — the uploader
// compares the object with what it sent: size (HeadObject), then content
// (GetObject streamed through MD5, part by part, against the MD5s of the
// bodies it sent). The same bytes are success with Result.Existed; other
// bytes are a *ConflictError (errors.Is(err, ErrConflict)); the object is
// never overwritten or deleted. The comparison and Head need s3:GetObject on
// the objects (HeadObject is authorised by it). The store must honour the condition:
// AWS S3, MinIO, versitygw and moto do on both requests; gofakes3 ignores
// it on CompleteMultipartUpload (see TestConditionalWritesPerStore).
//
// Proof of upload: a 2xx reply counts only with an ETag; for PutObject and
// UploadPart it must be the MD5 of the bytes sent (unless SSE-KMS — asked for,
// or the bucket's default as the reply's x-amz-server-side-encryption says —
// makes it opaque), and a CompleteMultipartUpload ETag of the composite form
// (md5-of-part-md5s "-N") must match the parts. Anything else is a failed
// attempt, retried; a store whose ETags are not MD5s thus costs a second PUT,
// which meets the first (412) and is settled by the comparison. The MD5 of each body is computed on its own goroutine
// while the body is sent; it also serves the comparison above, so no other
// hash is kept (BenchmarkHashes, BenchmarkPutObject/SDK).
//
// Clean-up (aborting a failed multipart upload and orphaned ones) runs even
// when the caller's context has ended, for at most Options.CleanupTimeout
// and never past the caller's deadline plus that budget.
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

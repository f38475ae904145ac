// Package s3store is the sink's S3 client: create-only, verified writes with
// bounded, logged retries, streamed multipart uploads, existence checks, listing and reading.
//
// Retries: every request gets Options.MaxAttempts attempts in total; only
// transient failures (network errors, HTTP 5xx, 408, 429, a body refused for
// not matching its checksum; see Retryable) are
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
// compares the object with what it sent: size (HeadObject), then content:
// a CRC32C the store keeps for the object (HeadObject with ChecksumMode
// ENABLED) that differs is a conflict at once; otherwise GetObject is
// streamed through CRC32C, part by part, against the parts it sent. The same bytes are success with
// Result.Existed; other bytes are a *ConflictError (errors.Is(err,
// ErrConflict)); the object is never overwritten or deleted. The comparison
// and Head need s3:GetObject on the objects (HeadObject is authorised by
// it). The store must honour the condition: AWS S3, MinIO, versitygw and
// moto do on both requests; gofakes3 ignores it on CompleteMultipartUpload
// (see TestConditionalWritesPerStore).
//
// Integrity, from one checksum computed once per body: every PutObject and
// UploadPart carries the body's CRC32C (x-amz-checksum-crc32c; the CPU's
// CRC32 instruction computes it at tens of GB/s, where MD5 runs below 1
// GB/s), a multipart upload is created with CRC32C FULL_OBJECT checksums and
// completed with the whole object's, and the store verifies them: a body
// changed on the way is refused (BadDigest, XAmzContentChecksumMismatch),
// and that refusal is retried. A 2xx reply counts only with an ETag and the
// store's echo of the checksum sent. A store whose reply carries no CRC32C
// ignored it (moto, gofakes3; see TestCorruptedUploadIsRefused): that reply
// is proved by its ETag, the MD5 of the body computed then, and the uploader
// sends no checksum from then on (Options.Checksum = ChecksumMD5 chooses
// that from the start; a store that refuses the header, like Backblaze B2,
// is retried at once without it). With MD5 ETags, a PutObject or UploadPart
// ETag must be the MD5 of the bytes sent (unless SSE-KMS — asked for, or the
// bucket's default as the reply's x-amz-server-side-encryption says — makes
// it opaque), and a CompleteMultipartUpload ETag of the composite form
// (md5-of-part-md5s "-N") must match the parts. Anything else is a failed
// attempt, retried; a store whose ETags are not MD5s thus costs a second
// PUT, which meets the first (412) and is settled by the comparison.
//
// Payload signing: over HTTPS requests carry UNSIGNED-PAYLOAD (TLS guards
// the body, the checksum proves it), which spares SigV4's SHA-256 pass over
// every byte; over plain HTTP the payload is signed (ClientOptions.SignPayload).
//
// Clean-up (aborting a failed multipart upload and orphaned ones) runs even
// when the caller's context has ended, for at most Options.CleanupTimeout
// and never past the caller's deadline plus that budget.
//
// SDK checksums: NewClient sets RequestChecksumCalculation and
// ResponseChecksumValidation to WhenRequired, so the SDK adds no checksum of
// its own (no second pass, no aws-chunked trailer a store may not know);
// the uploader's CRC32C travels as a plain header. What stores do with it:
//   - AWS S3, MinIO and versitygw verify and echo CRC32C, for PutObject,
//     UploadPart and FULL_OBJECT multipart completions (versitygw and MinIO
//     tested here).
//   - moto_server and gofakes3 ignore it: the MD5 fallback.
//   - Cloudflare R2: region "auto" with its endpoint; it has refused the
//     aws-chunked trailers the SDK sends by default since 2025 (plain
//     checksum headers are not trailers); not tested here.
//   - Backblaze B2 (S3 API): lists x-amz-checksum-* as unsupported
//     (InvalidArgument "Unsupported header"): the uploader retries without
//     it at once and goes on with MD5; set checksum = "md5" to skip that.
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

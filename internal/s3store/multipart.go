package s3store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// errGone marks a retried CompleteMultipartUpload that found its upload
// gone: an earlier attempt may have completed it and lost the reply.
var errGone = errors.New("the multipart upload is gone after a retried completion")

// multipart is one multipart upload in progress. Its methods are called by
// one goroutine at a time.
type multipart struct {
	u        *Uploader
	key      string
	uploadID string
	parts    []types.CompletedPart
	sums     []partSum // size and checksums of each part sent, for comparisons
	// whole is the CRC32C of the bytes sent so far, the object's checksum
	// (FULL_OBJECT) once complete.
	whole uint32
	// withCRC: the upload was created with CRC32C (FULL_OBJECT) checksums,
	// so each part and the completion carry theirs.
	withCRC bool
	bytes   int64
	count   counter
	// orphans is set when a CreateMultipartUpload attempt failed without a
	// clear refusal: the store may have created an upload whose id never
	// reached us.
	orphans bool
	existed bool // the key already held the bytes sent (Result.Existed)
}

func (u *Uploader) startMultipart(ctx context.Context, obj Object) (*multipart, error) {
	m := &multipart{u: u, key: obj.Key}
	err := u.retry.do(ctx, &m.count, "CreateMultipartUpload", obj.Key, func(ctx context.Context) error {
		m.withCRC = u.checksums.useCRC()
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String(u.opts.Bucket), Key: aws.String(obj.Key)}
		if m.withCRC {
			in.ChecksumAlgorithm, in.ChecksumType = types.ChecksumAlgorithmCrc32c, types.ChecksumTypeFullObject
		}
		setHeaders(&in.ContentType, &in.ContentEncoding, obj)
		in.ServerSideEncryption, in.SSEKMSKeyId = u.sse()
		out, err := u.client.CreateMultipartUpload(ctx, in)
		if err != nil {
			m.orphans = true
			return err
		}
		if aws.ToString(out.UploadId) == "" {
			m.orphans = true
			return &badReplyError{status: replyStatus(out.ResultMetadata), problem: "it has no upload id"}
		}
		m.uploadID = aws.ToString(out.UploadId)
		return nil
	})
	if err != nil {
		cctx, cancel := cleanupContext(ctx, u.opts.CleanupTimeout)
		m.abortOrphans(cctx)
		cancel()
	}
	return m, err
}

func (m *multipart) result() Result {
	return Result{Bytes: m.bytes, Attempts: m.count.attempts, Retries: m.count.retries,
		Multipart: true, Parts: len(m.parts), Existed: m.existed}
}

func (m *multipart) uploadPart(ctx context.Context, data []byte) error {
	number := int32(len(m.parts) + 1)
	if number > maxParts {
		return fmt.Errorf("upload: %s: object needs more than %d parts of %d bytes; raise the part size",
			m.key, maxParts, m.u.opts.PartSize)
	}
	var etag, crc *string
	sum := sumOf(data)
	err := m.u.retry.do(ctx, &m.count, "UploadPart", m.key, func(ctx context.Context) error {
		for {
			// A store that ignored the upload's algorithm may still refuse
			// the header; then the parts go without it.
			withCRC := m.withCRC && m.u.checksums.useCRC()
			body := newFencedBody(data, nil)
			in := &s3.UploadPartInput{
				Bucket:        aws.String(m.u.opts.Bucket),
				Key:           aws.String(m.key),
				UploadId:      aws.String(m.uploadID),
				PartNumber:    aws.Int32(number),
				Body:          body,
				ContentLength: aws.Int64(int64(len(data))),
			}
			if withCRC {
				in.ChecksumCRC32C = aws.String(encodeCRC(sum.crc))
			}
			out, err := m.u.client.UploadPart(ctx, in, withPayloadHash(data))
			body.fence()
			if err != nil {
				if withCRC && refusesChecksum(err) {
					m.u.checksums.fallBackToMD5(ctx, "UploadPart", m.key, err.Error())
					continue
				}
				return err
			}
			etag, crc = out.ETag, out.ChecksumCRC32C
			return m.u.checksums.checkBody(ctx, "UploadPart", m.key,
				reply{etag: out.ETag, crc32c: out.ChecksumCRC32C, sse: out.ServerSideEncryption, meta: out.ResultMetadata}, withCRC, &sum, data)
		}
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Part = int(number)
		}
		return err
	}
	m.parts = append(m.parts, types.CompletedPart{ETag: etag, PartNumber: aws.Int32(number), ChecksumCRC32C: crc})
	m.sums = append(m.sums, sum)
	m.whole = crc32.Update(m.whole, castagnoli, data)
	m.bytes += int64(len(data))
	return nil
}

// complete finishes the upload, create-only (If-None-Match: *). When the
// key exists (412), or a retried Complete finds the upload gone because an
// earlier attempt completed it and lost the reply, the object is compared
// with the parts sent: the same bytes are success (Result.Existed), other
// bytes a *ConflictError.
func (m *multipart) complete(ctx context.Context) (Result, error) {
	tries := 0
	err := m.u.retry.do(ctx, &m.count, "CompleteMultipartUpload", m.key, func(ctx context.Context) error {
		tries++
		in := &s3.CompleteMultipartUploadInput{
			Bucket:          aws.String(m.u.opts.Bucket),
			Key:             aws.String(m.key),
			UploadId:        aws.String(m.uploadID),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: m.parts},
			IfNoneMatch:     aws.String("*"),
		}
		if m.withCRC {
			in.ChecksumCRC32C, in.ChecksumType = aws.String(encodeCRC(m.whole)), types.ChecksumTypeFullObject
		}
		out, err := m.u.client.CompleteMultipartUpload(ctx, in)
		if err != nil {
			if tries > 1 && isCode(err, "NoSuchUpload") {
				return fmt.Errorf("%w (%w)", errGone, err)
			}
			return existsErr(err)
		}
		r := reply{etag: out.ETag, crc32c: out.ChecksumCRC32C, sse: out.ServerSideEncryption, meta: out.ResultMetadata}
		if got := aws.ToString(r.crc32c); m.withCRC && got != "" {
			if want := encodeCRC(m.whole); got != want {
				return &badReplyError{status: replyStatus(r.meta),
					problem: fmt.Sprintf("CRC32C %s is not the checksum of the %d bytes sent in %d parts (%s)", quote(got), m.bytes, len(m.parts), want)}
			}
		}
		return m.u.checksums.etags.checkComplete(r, m.sums)
	})
	switch {
	case err == nil:
	case errors.Is(err, errExists):
		// The store keeps a refused upload's parts: abort them first.
		cctx, cancel := cleanupContext(ctx, m.u.opts.CleanupTimeout)
		m.abortQuietly(cctx, m.uploadID)
		cancel()
		err = m.u.sameBytes(ctx, &m.count, m.key, m.sums, m.whole, err)
		m.existed = err == nil
	case errors.Is(err, errGone):
		err = m.u.sameBytes(ctx, &m.count, m.key, m.sums, m.whole, err)
		m.existed = err == nil
	default:
		return m.fail(ctx, err)
	}
	cctx, cancel := cleanupContext(ctx, m.u.opts.CleanupTimeout)
	defer cancel()
	m.abortOrphans(cctx)
	return m.result(), err
}

// abortOrphans aborts the other open uploads of this key after a Create had
// to be retried. Only one run writes a key at a time (the partition lease),
// so any other upload of the key is an orphan: ours from a lost reply, or a
// dead run's. Best effort: it needs s3:ListBucketMultipartUploads, and a
// lifecycle rule for incomplete uploads is the backstop. ctx is a clean-up
// context (cleanupContext).
func (m *multipart) abortOrphans(ctx context.Context) {
	if !m.orphans {
		return
	}
	if _, err := m.u.abortOpen(ctx, m.key, m.uploadID); err != nil {
		m.u.opts.Logger.WarnContext(ctx, "s3 could not abort orphaned multipart uploads", "bucket", m.u.opts.Bucket, "key", m.key, "error", err)
	}
}

func (m *multipart) abort(ctx context.Context, uploadID string) error {
	return m.u.abortUpload(ctx, m.key, uploadID)
}

// abortQuietly aborts an upload, logging a failure: the caller already has
// the error that matters.
func (m *multipart) abortQuietly(ctx context.Context, uploadID string) {
	if err := m.abort(ctx, uploadID); err != nil {
		m.u.opts.Logger.WarnContext(ctx, "s3 multipart upload left unfinished: abort failed; a bucket lifecycle rule for incomplete uploads cleans it up",
			"bucket", m.u.opts.Bucket, "key", m.key, "upload_id", uploadID, "error", err)
	}
}

// fail aborts the upload so no parts stay behind, and returns cause. The
// abort gets at most CleanupTimeout, and never runs past the caller's
// deadline plus that (cleanupContext).
func (m *multipart) fail(ctx context.Context, cause error) (Result, error) {
	if m.uploadID == "" {
		return m.result(), cause
	}
	actx, cancel := cleanupContext(ctx, m.u.opts.CleanupTimeout)
	defer cancel()
	if err := m.abort(actx, m.uploadID); err != nil {
		m.u.opts.Logger.ErrorContext(ctx, "s3 multipart upload left unfinished: abort failed; a bucket lifecycle rule for incomplete uploads cleans it up",
			"bucket", m.u.opts.Bucket, "key", m.key, "upload_id", m.uploadID, "error", err)
		cause = errors.Join(cause, err)
	}
	m.abortOrphans(actx)
	return m.result(), cause
}

func isCode(err error, code string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}

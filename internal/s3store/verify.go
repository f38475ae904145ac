package s3store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrConflict marks an upload that met an existing object holding other
// bytes than the ones sent. The object was left as it was.
var ErrConflict = errors.New("object exists with different bytes")

// ConflictError is the error of a create-only write whose key already holds
// an object with other bytes. errors.Is(err, ErrConflict) holds for it.
type ConflictError struct {
	Bucket, Key  string
	ExistingSize int64 // size of the object in the store
	SentSize     int64 // size of the body this upload sent
	// DiffFrom and DiffTo bound the first sent part whose bytes differ
	// (byte offsets, DiffTo exclusive), or the whole object when the
	// store's own checksum of it already differs; both 0 when the sizes
	// differ.
	DiffFrom, DiffTo int64
}

func (e *ConflictError) Error() string {
	target := "s3://" + e.Bucket + "/" + e.Key
	if e.ExistingSize != e.SentSize {
		return fmt.Sprintf("upload: %s: %v: the store holds %d bytes, this upload sent %d; left unchanged",
			target, ErrConflict, e.ExistingSize, e.SentSize)
	}
	return fmt.Sprintf("upload: %s: %v: same size (%d bytes) but the bytes differ within %d..%d; left unchanged",
		target, ErrConflict, e.SentSize, e.DiffFrom, e.DiffTo)
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// errExists marks a create-only request the store refused because the key
// exists (412 Precondition Failed).
var errExists = errors.New("the key already exists")

// existsErr marks a 412 reply as errExists; other errors pass unchanged.
func existsErr(err error) error {
	if httpStatus(err) == 412 || isCode(err, "PreconditionFailed") {
		return fmt.Errorf("%w (%w)", errExists, err)
	}
	return err
}

// badReplyError is a 2xx reply that does not prove the store took the bytes:
// no ETag, or an ETag that is not theirs. It fails the attempt and is
// retried like a transient error.
type badReplyError struct {
	status  int
	problem string
}

func (e *badReplyError) Error() string {
	return "the store's reply is not proof of an upload: " + e.problem
}

func replyStatus(md middleware.Metadata) int {
	if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		return r.StatusCode
	}
	return 0
}

// quote shows a value from the store in an error, cut short: a hostile
// server chooses it.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strconv.Quote(s)
}

// reply is what the ETag checks read from a PutObject, UploadPart or
// CompleteMultipartUpload reply.
type reply struct {
	etag *string
	// crc32c is the store's echo of the CRC32C sent with the request, if any.
	crc32c *string
	// sse is the encryption the store says it applied: with SSE-KMS (asked
	// for, or the bucket's default) the ETag is not an MD5 of the bytes.
	sse  types.ServerSideEncryption
	meta middleware.Metadata
}

// etagCheck proves replies by their ETags, which AWS S3, MinIO and
// versitygw derive from MD5 unless SSE-KMS is at work: all it needs to know
// of the Options is whether SSE-KMS was asked for.
type etagCheck struct {
	kms bool // Options.ServerSideEncryption is "aws:kms"
}

// check accepts a PutObject or UploadPart reply only if it carries an
// ETag, and — unless SSE-KMS makes the ETag opaque — the ETag is the MD5 of
// the n bytes sent, as AWS S3, MinIO and versitygw compute it.
func (e etagCheck) check(r reply, sum [md5.Size]byte, n int) error {
	got := strings.Trim(aws.ToString(r.etag), `"`)
	if got == "" {
		return &badReplyError{status: replyStatus(r.meta), problem: "it has no ETag"}
	}
	if e.opaque(r) {
		return nil
	}
	if want := hex.EncodeToString(sum[:]); !strings.EqualFold(got, want) {
		return &badReplyError{status: replyStatus(r.meta),
			problem: fmt.Sprintf("ETag %s is not the MD5 of the %d bytes sent (%s)", quote(got), n, want)}
	}
	return nil
}

// compositeETag matches the ETag S3, MinIO and versitygw give a multipart
// object: the MD5 of the parts' binary MD5s, a dash, the number of parts.
var compositeETag = regexp.MustCompile(`^[0-9a-fA-F]{32}-[0-9]+$`)

// checkComplete accepts a CompleteMultipartUpload reply only with an
// ETag. When the ETag has the composite form it must match the parts sent;
// other forms (stores that compute it otherwise) are accepted, since S3
// already checked every part's ETag listed in the request.
func (e etagCheck) checkComplete(r reply, sums []partSum) error {
	got := strings.Trim(aws.ToString(r.etag), `"`)
	if got == "" {
		return &badReplyError{status: replyStatus(r.meta), problem: "it has no ETag"}
	}
	if e.opaque(r) || !compositeETag.MatchString(got) {
		return nil
	}
	for _, p := range sums {
		if !p.hasMD5 { // the parts were proved by CRC32C, the object is by the parts
			return nil
		}
	}
	if want := composite(sums); !strings.EqualFold(got, want) {
		return &badReplyError{status: replyStatus(r.meta),
			problem: fmt.Sprintf("ETag %s is not the multipart ETag of the %d parts sent (%s)", quote(got), len(sums), want)}
	}
	return nil
}

func composite(sums []partSum) string {
	h := md5.New()
	for _, p := range sums {
		h.Write(p.md5[:])
	}
	return hex.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(sums))
}

// opaque reports whether r's ETag is not derived from MD5: under SSE-KMS,
// asked for here or applied by the bucket's default encryption (as the
// reply says).
func (e etagCheck) opaque(r reply) bool {
	return e.kms || strings.HasPrefix(string(r.sse), "aws:kms")
}

// Head reports whether key exists and its size. The request is retried per
// policy; a 404 is (0, false, nil).
func (u *Uploader) Head(ctx context.Context, key string) (size int64, found bool, err error) {
	if err := u.check(key); err != nil {
		return 0, false, err
	}
	var c counter
	h, err := u.head(ctx, &c, key)
	return h.size, h.found, err
}

// Delete removes the object at key, retried per policy; a missing one
// (404) is no error. S3 answers 204 either way.
func (u *Uploader) Delete(ctx context.Context, key string) error {
	if err := u.check(key); err != nil {
		return err
	}
	var c counter
	return u.retry.do(ctx, &c, "DeleteObject", key, func(ctx context.Context) error {
		_, err := u.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(u.opts.Bucket), Key: aws.String(key)})
		if httpStatus(err) == 404 {
			return nil
		}
		return err
	})
}

// headInfo is what HeadObject told of an object.
type headInfo struct {
	size  int64
	found bool
	crc   string // the whole object's CRC32C (header form), "" when the store keeps none
}

func (u *Uploader) head(ctx context.Context, c *counter, key string) (h headInfo, err error) {
	err = u.retry.do(ctx, c, "HeadObject", key, func(ctx context.Context) error {
		h = headInfo{}
		out, err := u.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(u.opts.Bucket), Key: aws.String(key),
			ChecksumMode: types.ChecksumModeEnabled})
		if httpStatus(err) == 404 {
			return nil
		}
		if err != nil {
			return err
		}
		if out.ContentLength == nil || *out.ContentLength < 0 {
			return &badReplyError{status: replyStatus(out.ResultMetadata), problem: "HeadObject gave no Content-Length"}
		}
		h.size, h.found = *out.ContentLength, true
		h.crc, _ = fullObjectCRC(out.ChecksumCRC32C, out.ChecksumType)
		return nil
	})
	return h, err
}

// sameBytes decides an upload that met an existing object (cause): success
// (nil) when the object holds exactly the bytes described by sums, else a
// *ConflictError; whole is the CRC32C of all of them. The size comes from
// HeadObject; when the store keeps the object's CRC32C, one that differs
// from whole is a conflict at
// once; otherwise the content is streamed from GetObject through CRC32C,
// part by part, against the parts sent (a difference is thus found to the
// part; two different bodies pass for the same with odds of 2^-32). A
// failure to read the object is returned as such; nothing is ever
// overwritten or deleted.
func (u *Uploader) sameBytes(ctx context.Context, c *counter, key string, sums []partSum, whole uint32, cause error) error {
	var sent int64
	for _, p := range sums {
		sent += p.size
	}
	h, err := u.head(ctx, c, key)
	if err != nil {
		return fmt.Errorf("upload: s3://%s/%s exists (%v); comparing it with the bytes sent: %w", u.opts.Bucket, key, cause, err)
	}
	if !h.found {
		return fmt.Errorf("upload: s3://%s/%s: the store refused to create it because it exists (%v), yet HeadObject finds no such object", u.opts.Bucket, key, cause)
	}
	if h.size != sent {
		return &ConflictError{Bucket: u.opts.Bucket, Key: key, ExistingSize: h.size, SentSize: sent}
	}
	if h.crc != "" && h.crc != encodeCRC(whole) {
		return &ConflictError{Bucket: u.opts.Bucket, Key: key, ExistingSize: h.size, SentSize: sent, DiffFrom: 0, DiffTo: sent}
	}
	var conflict *ConflictError
	err = u.retry.do(ctx, c, "GetObject", key, func(ctx context.Context) error {
		conflict = nil
		out, err := u.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(u.opts.Bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		if n := aws.ToInt64(out.ContentLength); out.ContentLength != nil && n != sent {
			conflict = &ConflictError{Bucket: u.opts.Bucket, Key: key, ExistingSize: n, SentSize: sent}
			return nil
		}
		d := crc32.New(castagnoli)
		var off int64
		for _, p := range sums {
			d.Reset()
			if _, err := io.CopyN(d, out.Body, p.size); err != nil {
				return fmt.Errorf("reading bytes %d..%d: %w", off, off+p.size, err)
			}
			if d.Sum32() != p.crc {
				conflict = &ConflictError{Bucket: u.opts.Bucket, Key: key, ExistingSize: h.size, SentSize: sent,
					DiffFrom: off, DiffTo: off + p.size}
				return nil
			}
			off += p.size
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("upload: s3://%s/%s exists (%v); comparing it with the bytes sent: %w", u.opts.Bucket, key, cause, err)
	}
	if conflict != nil {
		return conflict
	}
	return nil
}

// cleanupContext is the context of clean-up after a failed upload: it runs
// even when ctx has ended, but never past min(now, ctx's deadline) +
// budget (Options.CleanupTimeout) — a Lambda's remaining time is respected.
func cleanupContext(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(budget)
	if d, ok := ctx.Deadline(); ok && d.Add(budget).Before(deadline) {
		deadline = d.Add(budget)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

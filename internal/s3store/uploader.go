package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Defaults for zero Options fields.
const (
	DefaultMaxAttempts        = 3
	DefaultRetryDelay         = time.Second
	DefaultMaxRetryDelay      = 60 * time.Second
	DefaultPartSize           = 8 << 20
	DefaultMultipartThreshold = 16 << 20
	// MinPartSize is S3's lower bound for every part but the last.
	MinPartSize = 5 << 20
	// DefaultCleanupTimeout bounds the clean-up of a failed upload (aborts):
	// an abort is one small request, so 5 s leaves room for two retries at the
	// default backoff, and it is half the drain's default deadline margin
	// (10 s), so a failure at the margin is cleaned up before a Lambda's hard
	// timeout.
	DefaultCleanupTimeout = 5 * time.Second
	// maxParts is S3's upper bound on parts per upload.
	maxParts = 10000
)

// Options configure an Uploader. Zero values take the defaults above.
type Options struct {
	Bucket string
	// MaxAttempts is the total number of attempts per request, the first
	// included.
	MaxAttempts int
	// RetryDelay is the base of the backoff: retry n waits
	// jitter(min(RetryDelay·2^(n−1), MaxRetryDelay)), jitter ±20% uniform.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// MultipartThreshold: Put sends bodies larger than this as multipart.
	MultipartThreshold int64
	// PartSize of multipart uploads; at least 5 MiB. Stream holds at most two
	// parts in memory.
	PartSize int64
	// ServerSideEncryption is "", "AES256" or "aws:kms" (SSEKMSKeyID optional).
	ServerSideEncryption string
	SSEKMSKeyID          string
	// Checksum proves each body the store took: ChecksumCRC32C (the
	// default) or ChecksumMD5. With CRC32C, the first reply that carries no
	// CRC32C (a store that ignores the header) is checked by its MD5 ETag
	// instead, and so is every upload after it.
	Checksum string
	// CleanupTimeout bounds aborting a failed multipart upload and orphaned
	// ones. Clean-up runs even when the caller's context has ended, but never
	// past min(now, the caller's deadline) + CleanupTimeout.
	CleanupTimeout time.Duration
	Logger         *slog.Logger
	// Sleep waits between attempts; tests replace it to record delays.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Object names an object and the headers it is stored with.
type Object struct {
	Key, ContentType, ContentEncoding string
	// OmitEmpty: Stream writes nothing when the body is empty (Result is
	// zero), for an object that exists only when it has content.
	OmitEmpty bool
	// Gate, when set, holds the upload back until it opens (see Gate):
	// everything but the last byte of a single PutObject goes ahead. When
	// it fails, the upload returns an error wrapping ErrGateFailed and
	// nothing is stored.
	Gate *Gate
}

// Result describes one finished upload.
type Result struct {
	Bytes     int64
	Attempts  int  // S3 requests sent, retries included
	Retries   int  // of which retries
	Multipart bool // sent as a multipart upload
	Parts     int  // parts of the multipart upload; 0 for a single PutObject
	// Existed: the store refused to create the key because it already held
	// an object, and that object holds exactly the bytes sent (size and
	// content compared). It may be this upload's own earlier attempt whose
	// reply was lost, or another run's. Nothing was overwritten.
	Existed bool
}

// S3API is the part of *s3.Client the uploader uses.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, optFns ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// Uploader writes objects to one bucket with the retry policy of Options.
// It is safe for concurrent use.
type Uploader struct {
	client S3API
	opts   Options
	bad    error // invalid Options, returned by every call
	retry  retryPolicy

	// liveBuffers counts the bytes of part buffers held by Stream calls;
	// tests read it to check the memory bound.
	liveBuffers atomic.Int64
	// parts recycles full-size part buffers between Stream calls.
	parts sync.Pool
	// checksums proves what the store took, by CRC32C or MD5 ETags.
	checksums checksums
}

// New returns an Uploader. Invalid options are reported by every call
// (see Options.Validate).
func New(client S3API, o Options) *Uploader {
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = DefaultRetryDelay
	}
	if o.MaxRetryDelay == 0 {
		o.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.MultipartThreshold == 0 {
		o.MultipartThreshold = DefaultMultipartThreshold
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = DefaultCleanupTimeout
	}
	if o.Checksum == "" {
		o.Checksum = ChecksumCRC32C
	}
	u := &Uploader{client: client, opts: o, bad: o.Validate(), retry: retryPolicyOf(o),
		checksums: checksums{etags: etagCheck{kms: o.ServerSideEncryption == string(types.ServerSideEncryptionAwsKms)},
			bucket: o.Bucket, log: o.Logger}}
	u.checksums.md5Only.Store(o.Checksum == ChecksumMD5)
	return u
}

// Validate reports the first invalid field, naming it and its value.
func (o Options) Validate() error {
	switch {
	case o.Bucket == "":
		return errors.New("upload: bucket is empty")
	case o.MaxAttempts < 1:
		return fmt.Errorf("upload: max_attempts %d: must be at least 1", o.MaxAttempts)
	case o.RetryDelay < 0:
		return fmt.Errorf("upload: retry_delay %s: must not be negative", o.RetryDelay)
	case o.MaxRetryDelay < 0:
		return fmt.Errorf("upload: max retry delay %s: must not be negative", o.MaxRetryDelay)
	case o.PartSize != 0 && o.PartSize < MinPartSize:
		return fmt.Errorf("upload: part size %d bytes: must be at least %d (5 MiB)", o.PartSize, MinPartSize)
	case o.MultipartThreshold < 0:
		return fmt.Errorf("upload: multipart threshold %d: must not be negative", o.MultipartThreshold)
	case o.CleanupTimeout < 0:
		return fmt.Errorf("upload: cleanup timeout %s: must not be negative", o.CleanupTimeout)
	case o.Checksum != "" && o.Checksum != ChecksumCRC32C && o.Checksum != ChecksumMD5:
		return fmt.Errorf("upload: checksum %q: accepted are %q, %q", o.Checksum, ChecksumCRC32C, ChecksumMD5)
	}
	switch o.ServerSideEncryption {
	case "", string(types.ServerSideEncryptionAes256), string(types.ServerSideEncryptionAwsKms):
	default:
		return fmt.Errorf("upload: server_side_encryption %q: accepted are \"\", \"AES256\", \"aws:kms\"", o.ServerSideEncryption)
	}
	if o.SSEKMSKeyID != "" && o.ServerSideEncryption != string(types.ServerSideEncryptionAwsKms) {
		return fmt.Errorf("upload: an SSE KMS key id needs server_side_encryption \"aws:kms\", not %q", o.ServerSideEncryption)
	}
	return nil
}

func (u *Uploader) check(key string) error {
	if u.bad != nil {
		return u.bad
	}
	if key == "" {
		return errors.New("upload: object key is empty")
	}
	return nil
}

// Put stores body under obj.Key: one PutObject, or a multipart upload when
// body is larger than MultipartThreshold. Every request is retried per policy.
// The write is create-only: when the key already exists, Put succeeds with
// Result.Existed only if the object holds exactly body, and otherwise returns
// a *ConflictError (errors.Is(err, ErrConflict)); it never overwrites.
func (u *Uploader) Put(ctx context.Context, obj Object, body []byte) (Result, error) {
	if err := u.check(obj.Key); err != nil {
		return Result{}, err
	}
	if obj.Gate != nil && (len(body) == 0 || int64(len(body)) > u.opts.MultipartThreshold) {
		// An empty body has no last byte to hold back; parts would be
		// stored (and billed) before the gate says the object may exist.
		if err := obj.Gate.Wait(ctx); err != nil {
			return Result{}, wrapKey(obj.Key, err)
		}
	}
	if int64(len(body)) > u.opts.MultipartThreshold {
		return u.putMultipart(ctx, obj, body)
	}
	return u.putSingle(ctx, obj, body)
}

// putSingle sends body with one create-only PutObject and, when the key
// exists, compares the object with body.
func (u *Uploader) putSingle(ctx context.Context, obj Object, body []byte) (Result, error) {
	var c counter
	sum := sumOf(body)
	err := u.putObject(ctx, &c, obj, body, &sum)
	res := Result{Bytes: int64(len(body)), Attempts: c.attempts, Retries: c.retries}
	if errors.Is(err, errExists) {
		err = u.sameBytes(ctx, &c, obj.Key, []partSum{sum}, sum.crc, err)
		res.Existed = err == nil
		res.Attempts, res.Retries = c.attempts, c.retries
	}
	return res, err
}

// putObject sends body with If-None-Match: * until the store takes it, it
// fails for good, or the key turns out to exist (an error wrapping
// errExists). A reply that does not prove the bytes (checkBody) is a failed
// attempt.
func (u *Uploader) putObject(ctx context.Context, c *counter, obj Object, body []byte, sum *partSum) error {
	return u.retry.do(ctx, c, "PutObject", obj.Key, func(ctx context.Context) error {
		for {
			withCRC := u.checksums.useCRC()
			rd := newFencedBody(body, obj.Gate)
			in := &s3.PutObjectInput{
				Bucket:        aws.String(u.opts.Bucket),
				Key:           aws.String(obj.Key),
				Body:          rd,
				ContentLength: aws.Int64(int64(len(body))),
				IfNoneMatch:   aws.String("*"),
			}
			if withCRC {
				in.ChecksumCRC32C = aws.String(encodeCRC(sum.crc))
			}
			setHeaders(&in.ContentType, &in.ContentEncoding, obj)
			in.ServerSideEncryption, in.SSEKMSKeyId = u.sse()
			// A read held at the gate wakes when the call's context ends:
			// the SDK cannot return while a body read is in progress.
			stop := context.AfterFunc(ctx, rd.fence)
			out, err := u.client.PutObject(ctx, in, withPayloadHash(body))
			stop()
			rd.fence()
			if err != nil && obj.Gate != nil && obj.Gate.failed() {
				return obj.Gate.result() // the body stopped short: nothing stored
			}
			if err != nil {
				if withCRC && refusesChecksum(err) {
					u.checksums.fallBackToMD5(ctx, "PutObject", obj.Key, err.Error())
					continue // at once, without the header: this is no failed attempt
				}
				return existsErr(err)
			}
			return u.checksums.checkBody(ctx, "PutObject", obj.Key,
				reply{etag: out.ETag, crc32c: out.ChecksumCRC32C, sse: out.ServerSideEncryption, meta: out.ResultMetadata}, withCRC, sum, body)
		}
	})
}

func (u *Uploader) putMultipart(ctx context.Context, obj Object, body []byte) (Result, error) {
	m, err := u.startMultipart(ctx, obj)
	if err != nil {
		return m.result(), err
	}
	for off := int64(0); off < int64(len(body)); off += u.opts.PartSize {
		end := min(off+u.opts.PartSize, int64(len(body)))
		if err := m.uploadPart(ctx, body[off:end]); err != nil {
			return m.fail(ctx, err)
		}
	}
	return m.complete(ctx)
}

func setHeaders(contentType, contentEncoding **string, obj Object) {
	if obj.ContentType != "" {
		*contentType = aws.String(obj.ContentType)
	}
	if obj.ContentEncoding != "" {
		*contentEncoding = aws.String(obj.ContentEncoding)
	}
}

func (u *Uploader) sse() (types.ServerSideEncryption, *string) {
	var key *string
	if u.opts.SSEKMSKeyID != "" {
		key = aws.String(u.opts.SSEKMSKeyID)
	}
	return types.ServerSideEncryption(u.opts.ServerSideEncryption), key
}

// List calls fn for every object under prefix, in key order, page by page;
// each page request is retried per policy. An error from fn stops the walk
// and is returned as is.
func (u *Uploader) List(ctx context.Context, prefix string, fn func(key string, size int64) error) error {
	return u.ListAfter(ctx, prefix, "", fn)
}

// ListAfter is List from the first key after startAfter ("" for all).
func (u *Uploader) ListAfter(ctx context.Context, prefix, startAfter string, fn func(key string, size int64) error) error {
	if u.bad != nil {
		return u.bad
	}
	var token *string
	var after *string
	if startAfter != "" {
		after = aws.String(startAfter)
	}
	for {
		var out *s3.ListObjectsV2Output
		var c counter
		err := u.retry.do(ctx, &c, "ListObjectsV2", prefix, func(ctx context.Context) error {
			var err error
			out, err = u.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
				Bucket:            aws.String(u.opts.Bucket),
				Prefix:            aws.String(prefix),
				ContinuationToken: token,
				StartAfter:        after,
			})
			return err
		})
		if err != nil {
			return err
		}
		for _, o := range out.Contents {
			if err := fn(aws.ToString(o.Key), aws.ToInt64(o.Size)); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return nil
		}
		token = out.NextContinuationToken
	}
}

// Get returns the whole object; a reply cut short is retried like a failed
// request.
func (u *Uploader) Get(ctx context.Context, key string) ([]byte, error) {
	if err := u.check(key); err != nil {
		return nil, err
	}
	var data []byte
	var c counter
	err := u.retry.do(ctx, &c, "GetObject", key, func(ctx context.Context) error {
		out, err := u.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(u.opts.Bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		if n := aws.ToInt64(out.ContentLength); n > 0 && n < 1<<31 {
			// Read into a buffer of the object's size, not one that grows.
			data = make([]byte, 0, n+bytes.MinRead)
			buf := bytes.NewBuffer(data)
			_, err = buf.ReadFrom(out.Body)
			data = buf.Bytes()
			return err
		}
		data, err = io.ReadAll(out.Body)
		return err
	})
	return data, err
}

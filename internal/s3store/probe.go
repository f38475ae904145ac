package s3store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ProbeKeyName is the last path element of the key ProbeWrite uses: a
// leading '_' like gap markers, and no name a data object can have.
const ProbeKeyName = "_iggy-s3-sink-write-check"

// ProbeList checks that the bucket can be listed under prefix (one page of
// at most one key), with the retry policy of every other request.
func (u *Uploader) ProbeList(ctx context.Context, prefix string) error {
	if u.bad != nil {
		return u.bad
	}
	var c counter
	return u.retry.do(ctx, &c, "ListObjectsV2", prefix, func(ctx context.Context) error {
		_, err := u.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(u.opts.Bucket), Prefix: aws.String(prefix), MaxKeys: aws.Int32(1)})
		return err
	})
}

// ProbeWrite checks that these credentials may write key, writing nothing:
// it starts a multipart upload of key — which S3 authorises as PutObject,
// with the configured server-side encryption (and so the KMS key) — and
// aborts it at once. No object appears; should the abort fail, the bucket's
// rule for incomplete uploads removes the upload's record.
func (u *Uploader) ProbeWrite(ctx context.Context, key string) error {
	if err := u.check(key); err != nil {
		return err
	}
	var c counter
	var id string
	err := u.retry.do(ctx, &c, "CreateMultipartUpload", key, func(ctx context.Context) error {
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String(u.opts.Bucket), Key: aws.String(key)}
		in.ServerSideEncryption, in.SSEKMSKeyId = u.sse()
		out, err := u.client.CreateMultipartUpload(ctx, in)
		if err != nil {
			return err
		}
		id = aws.ToString(out.UploadId)
		if id == "" {
			return errors.New("CreateMultipartUpload returned no upload id")
		}
		return nil
	})
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return u.retry.do(actx, &c, "AbortMultipartUpload", key, func(ctx context.Context) error {
		_, err := u.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(u.opts.Bucket), Key: aws.String(key), UploadId: aws.String(id)})
		if isCode(err, "NoSuchUpload") {
			return nil
		}
		return err
	})
}

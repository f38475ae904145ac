package s3store

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// AbortUploads aborts every multipart upload still open for key and says
// how many there were. A run that died between its parts and their
// completion leaves its upload behind, and the store keeps (and bills) the
// parts until someone aborts it. Only one run writes a key at a time (the
// partition lease), so whoever recovers the key may abort them all. It
// needs s3:ListBucketMultipartUploads on the bucket and
// s3:AbortMultipartUpload on the key.
func (u *Uploader) AbortUploads(ctx context.Context, key string) (int, error) {
	if err := u.check(key); err != nil {
		return 0, err
	}
	return u.abortOpen(ctx, key, "")
}

// abortOpen aborts the open uploads of key but keep (an upload id, "" for
// none), page by page.
func (u *Uploader) abortOpen(ctx context.Context, key, keep string) (int, error) {
	aborted := 0
	var keyMarker, idMarker *string
	for {
		var c counter
		var out *s3.ListMultipartUploadsOutput
		err := u.retry.do(ctx, &c, "ListMultipartUploads", key, func(ctx context.Context) error {
			var err error
			out, err = u.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{
				Bucket: aws.String(u.opts.Bucket), Prefix: aws.String(key), KeyMarker: keyMarker, UploadIdMarker: idMarker})
			return err
		})
		if err != nil {
			return aborted, err
		}
		for _, up := range out.Uploads {
			id := aws.ToString(up.UploadId)
			if aws.ToString(up.Key) != key || id == keep || id == "" {
				continue // a longer key under the same prefix, or our own
			}
			if err := u.abortUpload(ctx, key, id); err != nil {
				return aborted, err
			}
			aborted++
		}
		if !aws.ToBool(out.IsTruncated) || (out.NextKeyMarker == nil && out.NextUploadIdMarker == nil) {
			return aborted, nil
		}
		keyMarker, idMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

func (u *Uploader) abortUpload(ctx context.Context, key, uploadID string) error {
	var c counter // aborts are clean-up; they do not count toward Result
	return u.retry.do(ctx, &c, "AbortMultipartUpload", key, func(ctx context.Context) error {
		_, err := u.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(u.opts.Bucket), Key: aws.String(key), UploadId: aws.String(uploadID)})
		if isCode(err, "NoSuchUpload") {
			return nil // nothing left to clean up (an earlier attempt went through)
		}
		return err
	})
}

// lifecycleAPI is the client call AbortRule needs; *s3.Client has it.
type lifecycleAPI interface {
	GetBucketLifecycleConfiguration(ctx context.Context, in *s3.GetBucketLifecycleConfigurationInput, optFns ...func(*s3.Options)) (*s3.GetBucketLifecycleConfigurationOutput, error)
}

// AbortRule looks for an enabled bucket lifecycle rule that aborts
// incomplete multipart uploads of keys under prefix, and returns its id and
// its days. found is false when there is none (or no lifecycle
// configuration at all). It needs s3:GetLifecycleConfiguration.
func (u *Uploader) AbortRule(ctx context.Context, prefix string) (id string, days int32, found bool, err error) {
	if u.bad != nil {
		return "", 0, false, u.bad
	}
	lc, ok := u.client.(lifecycleAPI)
	if !ok {
		return "", 0, false, fmt.Errorf("upload: the S3 client cannot read lifecycle rules")
	}
	var out *s3.GetBucketLifecycleConfigurationOutput
	var c counter
	err = u.retry.do(ctx, &c, "GetBucketLifecycleConfiguration", prefix, func(ctx context.Context) error {
		var err error
		out, err = lc.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(u.opts.Bucket)})
		if isCode(err, "NoSuchLifecycleConfiguration") {
			out, err = &s3.GetBucketLifecycleConfigurationOutput{}, nil
		}
		return err
	})
	if err != nil {
		return "", 0, false, err
	}
	for _, r := range out.Rules {
		a := r.AbortIncompleteMultipartUpload
		if r.Status != types.ExpirationStatusEnabled || a == nil || a.DaysAfterInitiation == nil {
			continue
		}
		if strings.HasPrefix(prefix, rulePrefix(r)) {
			return aws.ToString(r.ID), *a.DaysAfterInitiation, true, nil
		}
	}
	return "", 0, false, nil
}

// rulePrefix is the key prefix a lifecycle rule applies to ("" for all).
func rulePrefix(r types.LifecycleRule) string {
	if f := r.Filter; f != nil {
		if f.And != nil {
			return aws.ToString(f.And.Prefix)
		}
		return aws.ToString(f.Prefix)
	}
	return aws.ToString(r.Prefix) //nolint:staticcheck // the legacy form some buckets still have
}

package s3fake

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// TestCreateOnlyOnEveryPath: a create-only PutObject and a create-only
// CompleteMultipartUpload both meet an existing key with 412 and leave it.
func TestCreateOnlyOnEveryPath(t *testing.T) {
	ctx := context.Background()
	s := Start(t)
	c := s.Client(t)
	s.CreateBucket(t, "bkt")
	put := func(body string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader([]byte(body)), IfNoneMatch: aws.String("*")})
		return err
	}
	if err := put("first"); err != nil {
		t.Fatal(err)
	}
	if err := put("second"); status(err) != http.StatusPreconditionFailed {
		t.Fatalf("second create-only PUT: %v, want 412", err)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("k"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("third"))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("k"), UploadId: up.UploadId, IfNoneMatch: aws.String("*"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}})
	var ae smithy.APIError
	if status(err) != http.StatusPreconditionFailed || !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("create-only completion over an existing key: %v, want 412 PreconditionFailed", err)
	}
	if got, _ := s.Object("bkt", "k"); string(got) != "first" {
		t.Fatalf("object = %q, want the first body", got)
	}
}

// TestLoseReplyApplies: a lost reply applies the request; a failure does not.
func TestLoseReplyApplies(t *testing.T) {
	ctx := context.Background()
	s := Start(t)
	c := s3.New(s3.Options{Region: s.Region, BaseEndpoint: aws.String(s.Endpoint), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials: aws.AnonymousCredentials{}})
	s.CreateBucket(t, "bkt")
	for _, tt := range []struct {
		fault   Fault
		applied bool
	}{{LoseReply, true}, {Fail, false}} {
		key := map[Fault]string{LoseReply: "lost", Fail: "failed"}[tt.fault]
		s.SetFault(func(op Op, _ string) Fault {
			if op == OpPut {
				return tt.fault
			}
			return Pass
		})
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), Body: bytes.NewReader([]byte("x"))})
		if status(err) != http.StatusInternalServerError {
			t.Fatalf("%s: err = %v, want 500", key, err)
		}
		s.SetFault(nil)
		if _, ok := s.Object("bkt", key); ok != tt.applied {
			t.Fatalf("%s: stored = %v, want %v", key, ok, tt.applied)
		}
	}
	if s.Requests(OpPut) != 2 {
		t.Fatalf("%d PutObject requests, want 2", s.Requests(OpPut))
	}
}

package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// s3Stores start each S3-compatible store the tests know, with one bucket.
// The README's conditional-write table is this file's expectations.
var s3Stores = []struct {
	name  string
	start func(t testing.TB) *testenv.S3
	// honoured: does the store refuse an existing key with 412 when asked
	// for If-None-Match: * on PutObject / on CompleteMultipartUpload?
	putHonoured, completeHonoured bool
}{
	{"versitygw", testenv.StartVersity, true, true},
	{"minio", testenv.StartMinIO, true, true},
	{"moto_server", startMotoS3, true, true},
	{"gofakes3", startGofakes3, true, false},
}

func startMotoS3(t testing.TB) *testenv.S3 {
	m := testenv.StartMoto(t)
	// moto serves S3 on the same port as DynamoDB and accepts any key.
	return &testenv.S3{Endpoint: m.Endpoint, AccessKey: "test", SecretKey: "test", Region: "us-east-1", PID: m.PID}
}

func startGofakes3(t testing.TB) *testenv.S3 {
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	return &testenv.S3{Endpoint: srv.URL, AccessKey: "test", SecretKey: "test", Region: "us-east-1"}
}

// TestConditionalWritesPerStore measures which stores honour If-None-Match: *
// on an existing key, for a single PutObject and for the completion of a
// multipart upload, and checks the README's table. A store that ignores the
// condition overwrites the object; create-only writes are not fenced there.
func TestConditionalWritesPerStore(t *testing.T) {
	for _, st := range s3Stores {
		t.Run(st.name, func(t *testing.T) {
			srv := st.start(t)
			srv.CreateBucket(t, bucket)
			c := srv.Client(t)
			ctx := context.Background()
			put := func(key, body string, cond bool) error {
				in := &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))}
				if cond {
					in.IfNoneMatch = aws.String("*")
				}
				_, err := c.PutObject(ctx, in)
				return err
			}
			read := func(key string) string {
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
				if err != nil {
					t.Fatalf("GetObject %s: %v", key, err)
				}
				defer out.Body.Close()
				b, _ := io.ReadAll(out.Body)
				return string(b)
			}

			if err := put("new", "first", true); err != nil {
				t.Fatalf("conditional PutObject of a new key: %v", err)
			}
			err := put("new", "second", true)
			refused := httpStatus(err) == 412
			if err != nil && !refused {
				t.Fatalf("conditional PutObject of an existing key: %v (want 412 or success)", err)
			}
			if refused != st.putHonoured {
				t.Fatalf("PutObject If-None-Match on an existing key refused=%v, README says %v (err %v)", refused, st.putHonoured, err)
			}
			if got, want := read("new"), map[bool]string{true: "first", false: "second"}[refused]; got != want {
				t.Fatalf("object holds %q after the conditional PUT (refused=%v), want %q", got, refused, want)
			}

			if err := put("mp", "first", false); err != nil {
				t.Fatal(err)
			}
			err = completeOne(ctx, c, "mp", "second")
			refused = httpStatus(err) == 412
			if err != nil && !refused {
				t.Fatalf("conditional CompleteMultipartUpload of an existing key: %v (want 412 or success)", err)
			}
			if refused != st.completeHonoured {
				t.Fatalf("CompleteMultipartUpload If-None-Match on an existing key refused=%v, README says %v (err %v)", refused, st.completeHonoured, err)
			}
			if got, want := read("mp"), map[bool]string{true: "first", false: "second"}[refused]; got != want {
				t.Fatalf("object holds %q after the conditional Complete (refused=%v), want %q", got, refused, want)
			}
			t.Logf("%s: PutObject condition honoured=%v, CompleteMultipartUpload condition honoured=%v", st.name, st.putHonoured, refused)
		})
	}
}

// completeOne uploads body as a one-part multipart upload completed with
// If-None-Match: *, and aborts the upload when the completion fails.
func completeOne(ctx context.Context, c *s3.Client, key, body string) error {
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return err
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte(body))})
	if err != nil {
		return err
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key),
		UploadId: up.UploadId, IfNoneMatch: aws.String("*"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}})
	if err != nil {
		_, aerr := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId})
		var nsu *types.NoSuchUpload
		if aerr != nil && !errors.As(aerr, &nsu) {
			return errors.Join(err, aerr)
		}
	}
	return err
}

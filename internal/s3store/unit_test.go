package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// fakeS3 is an in-memory S3API for the uploader's pure logic; the behaviour
// against a real store is covered by the versitygw tests.
type fakeS3 struct {
	mu      sync.Mutex
	calls   []string
	objects map[string][]byte
	uploads map[string]map[int32][]byte
	// fail, when set, may return an error for a call (by operation name and
	// how many times that operation was called before).
	fail   func(op string, n int) error
	counts map[string]int

	lastPut    *s3.PutObjectInput
	lastCreate *s3.CreateMultipartUploadInput
}

func newFake() *fakeS3 {
	return &fakeS3{objects: map[string][]byte{}, uploads: map[string]map[int32][]byte{}, counts: map[string]int{}}
}

func (f *fakeS3) enter(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op)
	n := f.counts[op]
	f.counts[op]++
	if f.fail != nil {
		return f.fail(op, n)
	}
	return nil
}

func (f *fakeS3) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	if err := f.enter("PutObject"); err != nil {
		return nil, err
	}
	data, _ := io.ReadAll(in.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastPut = in
	if _, ok := f.objects[*in.Key]; ok && aws.ToString(in.IfNoneMatch) == "*" {
		return nil, statusErr(412, "PreconditionFailed")
	}
	f.objects[*in.Key] = data
	return &s3.PutObjectOutput{ETag: aws.String(etagOf(data))}, nil
}

func etagOf(data []byte) string {
	sum := md5.Sum(data)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

func (f *fakeS3) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	if err := f.enter("CreateMultipartUpload"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastCreate = in
	id := fmt.Sprintf("up%d", len(f.uploads)+1)
	f.uploads[id] = map[int32][]byte{}
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String(id)}, nil
}

func (f *fakeS3) UploadPart(ctx context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if err := f.enter("UploadPart"); err != nil {
		return nil, err
	}
	data, _ := io.ReadAll(in.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	parts, ok := f.uploads[*in.UploadId]
	if !ok {
		return nil, statusErr(404, "NoSuchUpload")
	}
	parts[*in.PartNumber] = data
	return &s3.UploadPartOutput{ETag: aws.String(etagOf(data))}, nil
}

func (f *fakeS3) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if err := f.enter("CompleteMultipartUpload"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	parts, ok := f.uploads[*in.UploadId]
	if !ok {
		return nil, statusErr(404, "NoSuchUpload")
	}
	if _, ok := f.objects[*in.Key]; ok && aws.ToString(in.IfNoneMatch) == "*" {
		return nil, statusErr(412, "PreconditionFailed")
	}
	var buf bytes.Buffer
	h := md5.New()
	for i, p := range in.MultipartUpload.Parts {
		if *p.PartNumber != int32(i+1) {
			return nil, statusErr(400, "InvalidPartOrder")
		}
		buf.Write(parts[*p.PartNumber])
		sum := md5.Sum(parts[*p.PartNumber])
		h.Write(sum[:])
	}
	f.objects[*in.Key] = buf.Bytes()
	delete(f.uploads, *in.UploadId)
	etag := fmt.Sprintf(`"%x-%d"`, h.Sum(nil), len(in.MultipartUpload.Parts))
	return &s3.CompleteMultipartUploadOutput{ETag: aws.String(etag)}, nil
}

func (f *fakeS3) AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, _ ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	if err := f.enter("AbortMultipartUpload"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.uploads[*in.UploadId]; !ok {
		return nil, statusErr(404, "NoSuchUpload")
	}
	delete(f.uploads, *in.UploadId)
	return &s3.AbortMultipartUploadOutput{}, nil
}

func (f *fakeS3) ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, _ ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error) {
	return nil, errors.New("fakeS3: ListMultipartUploads not used in unit tests")
}

func (f *fakeS3) HeadObject(ctx context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if err := f.enter("HeadObject"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.objects[*in.Key]
	if !ok {
		return nil, statusErr(404, "NotFound")
	}
	return &s3.HeadObjectOutput{ContentLength: aws.Int64(int64(len(data)))}, nil
}

func (f *fakeS3) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return nil, errors.New("fakeS3: ListObjectsV2 not used in unit tests")
}

func (f *fakeS3) GetObject(ctx context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	if err := f.enter("GetObject"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.objects[*in.Key]
	if !ok {
		return nil, statusErr(404, "NoSuchKey")
	}
	return &s3.GetObjectOutput{ContentLength: aws.Int64(int64(len(data))), Body: io.NopCloser(bytes.NewReader(data))}, nil
}

func (f *fakeS3) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	if err := f.enter("DeleteObject"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, *in.Key)
	return &s3.DeleteObjectOutput{}, nil
}

func (f *fakeS3) openUploads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.uploads)
}

func (f *fakeS3) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[op]
}

func noSleep(context.Context, time.Duration) error { return nil }

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // "" = valid
	}{
		{"defaults", Options{Bucket: "b"}, ""},
		{"kms with key", Options{Bucket: "b", ServerSideEncryption: "aws:kms", SSEKMSKeyID: "k"}, ""},
		{"aes", Options{Bucket: "b", ServerSideEncryption: "AES256"}, ""},
		{"no bucket", Options{}, "bucket"},
		{"negative attempts", Options{Bucket: "b", MaxAttempts: -1}, "max_attempts -1"},
		{"negative delay", Options{Bucket: "b", RetryDelay: -time.Second}, "retry_delay"},
		{"small part", Options{Bucket: "b", PartSize: 1 << 20}, "part size 1048576"},
		{"bad sse", Options{Bucket: "b", ServerSideEncryption: "aes256"}, `server_side_encryption "aes256"`},
		{"kms key without kms", Options{Bucket: "b", SSEKMSKeyID: "k"}, "aws:kms"},
		{"negative cleanup timeout", Options{Bucket: "b", CleanupTimeout: -time.Second}, "cleanup timeout -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := New(newFake(), tt.o)
			_, err := u.Put(context.Background(), Object{Key: "k"}, []byte("x"))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Put: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Put error = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestEncryptionHeadersSent(t *testing.T) {
	f := newFake()
	u := New(f, Options{Bucket: "b", ServerSideEncryption: "aws:kms", SSEKMSKeyID: "key-1",
		MultipartThreshold: MinPartSize, PartSize: MinPartSize})
	ctx := context.Background()
	if _, err := u.Put(ctx, Object{Key: "small", ContentType: "application/json", ContentEncoding: "gzip"}, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if p := f.lastPut; string(p.ServerSideEncryption) != "aws:kms" || aws.ToString(p.SSEKMSKeyId) != "key-1" ||
		aws.ToString(p.ContentType) != "application/json" || aws.ToString(p.ContentEncoding) != "gzip" {
		t.Fatalf("PutObject headers: sse=%q key=%q type=%q enc=%q", p.ServerSideEncryption,
			aws.ToString(p.SSEKMSKeyId), aws.ToString(p.ContentType), aws.ToString(p.ContentEncoding))
	}
	if _, err := u.Put(ctx, Object{Key: "big"}, make([]byte, MinPartSize+1)); err != nil {
		t.Fatal(err)
	}
	if c := f.lastCreate; string(c.ServerSideEncryption) != "aws:kms" || aws.ToString(c.SSEKMSKeyId) != "key-1" {
		t.Fatalf("CreateMultipartUpload sse=%q key=%q", c.ServerSideEncryption, aws.ToString(c.SSEKMSKeyId))
	}
}

// A Complete whose reply was lost: the retry finds NoSuchUpload but the
// object is there with the right size, so the upload succeeded.
func TestCompleteReplyLostIsSuccess(t *testing.T) {
	f := newFake()
	lossy := &lostReply{fakeS3: f, complete: f.CompleteMultipartUpload}
	u := New(lossy, Options{Bucket: "b", MultipartThreshold: MinPartSize, PartSize: MinPartSize, Sleep: noSleep})
	body := bytes.Repeat([]byte("abc"), MinPartSize) // 3 parts
	res, err := u.Put(context.Background(), Object{Key: "k"}, body)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if !bytes.Equal(f.objects["k"], body) || res.Parts != 3 || !res.Multipart || !res.Existed {
		t.Fatalf("object %d bytes, result %+v", len(f.objects["k"]), res)
	}
	// The object is compared with the parts sent: size, then content.
	if f.count("CompleteMultipartUpload") != 2 || f.count("AbortMultipartUpload") != 0 ||
		f.count("HeadObject") != 1 || f.count("GetObject") != 1 {
		t.Fatalf("calls: %v", f.calls)
	}
}

// lostReply completes the upload on the first call but reports a timeout.
type lostReply struct {
	*fakeS3
	complete func(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	n        int
}

func (l *lostReply) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, o ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	out, err := l.complete(ctx, in, o...)
	l.n++
	if l.n == 1 && err == nil {
		return nil, sendErr(timeoutErr{})
	}
	return out, err
}

func TestStreamFailuresAbort(t *testing.T) {
	const chunk = 64 << 10
	tests := []struct {
		name       string
		size       int
		failOp     string
		failFrom   int // calls of failOp from this one on fail
		wantOp     string
		wantAborts int
		stopsEarly bool
	}{
		{"middle part", 10 * MinPartSize, "UploadPart", 1, "UploadPart", 1, true},
		{"last part after write returned", 2*MinPartSize + chunk, "UploadPart", 2, "UploadPart", 1, false},
		{"create", 3 * MinPartSize, "CreateMultipartUpload", 0, "CreateMultipartUpload", 0, true},
		{"complete", 2*MinPartSize + chunk, "CompleteMultipartUpload", 0, "CompleteMultipartUpload", 1, false},
		{"single put", MinPartSize, "PutObject", 0, "PutObject", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.fail = func(op string, n int) error {
				if op == tt.failOp && n >= tt.failFrom {
					return statusErr(500, "InternalError")
				}
				return nil
			}
			u := New(f, Options{Bucket: "b", PartSize: MinPartSize, MaxAttempts: 3, Sleep: noSleep})
			buf := make([]byte, chunk)
			writes := 0
			_, err := u.Stream(context.Background(), Object{Key: "k"}, func(w io.Writer) error {
				for i := 0; i < tt.size/chunk; i++ {
					writes++
					if _, err := w.Write(buf); err != nil {
						return err
					}
				}
				return nil
			})
			var e *Error
			if !errors.As(err, &e) || e.Op != tt.wantOp || e.Status != 500 || e.Attempts != 3 || e.Key != "k" ||
				(tt.wantOp == "UploadPart") != (e.Part > 0) {
				t.Fatalf("Stream error = %v, want %s 500 after 3 attempts", err, tt.wantOp)
			}
			if f.openUploads() != 0 || f.count("AbortMultipartUpload") != tt.wantAborts {
				t.Fatalf("open uploads %d, calls %v", f.openUploads(), f.calls)
			}
			if _, ok := f.objects["k"]; ok {
				t.Fatal("object written despite failure")
			}
			if stopped := writes < tt.size/chunk; stopped != tt.stopsEarly {
				t.Fatalf("writer stopped early = %v after %d writes, want %v", stopped, writes, tt.stopsEarly)
			}
			if u.liveBuffers.Load() != 0 {
				t.Fatalf("live buffer bytes after Stream = %d", u.liveBuffers.Load())
			}
		})
	}
}

func TestStreamSizes(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		multipart bool
		parts     int
	}{
		{"empty", 0, false, 0},
		{"small", 1000, false, 0},
		{"exactly one part", MinPartSize, false, 0},
		{"one part and a byte", MinPartSize + 1, true, 2},
		{"two parts exactly", 2 * MinPartSize, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			u := New(f, Options{Bucket: "b", PartSize: MinPartSize})
			body := make([]byte, tt.size)
			for i := range body {
				body[i] = byte(i * 7)
			}
			res, err := u.Stream(context.Background(), Object{Key: "k"}, func(w io.Writer) error {
				_, err := io.Copy(w, bytes.NewReader(body)) // 32 KiB writes
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Multipart != tt.multipart || res.Parts != tt.parts || res.Bytes != int64(tt.size) {
				t.Fatalf("result %+v, want multipart=%v parts=%d bytes=%d", res, tt.multipart, tt.parts, tt.size)
			}
			if !bytes.Equal(f.objects["k"], body) {
				t.Fatalf("stored %d bytes differ from the %d written", len(f.objects["k"]), len(body))
			}
		})
	}
}

func TestNewClientRejectsBadOptions(t *testing.T) {
	const secret = "s3cr3t-value-never-shown"
	tests := []struct {
		name string
		o    ClientOptions
		want string
	}{
		{"secret without key id", ClientOptions{Region: "us-east-1", SecretAccessKey: secret}, "set together"},
		{"key id without secret", ClientOptions{Region: "us-east-1", AccessKeyID: "AKID"}, "set together"},
		{"endpoint without scheme", ClientOptions{Region: "us-east-1", Endpoint: "127.0.0.1:9000"}, `endpoint "127.0.0.1:9000"`},
		{"auto without endpoint", ClientOptions{Region: "auto"}, `region "auto"`},
		{"negative timeout", ClientOptions{Region: "us-east-1", ResponseHeaderTimeout: -1}, "response header timeout"},
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewClient(context.Background(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewClient error = %v, want one naming %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error shows the secret: %v", err)
			}
		})
	}
}

func TestNewClientPathStyle(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	off, on := false, true
	tests := []struct {
		name string
		o    ClientOptions
		want bool
	}{
		{"aws default", ClientOptions{Region: "eu-west-1"}, false},
		{"endpoint implies path style", ClientOptions{Region: "us-east-1", Endpoint: "http://127.0.0.1:9000"}, true},
		{"explicit off wins", ClientOptions{Region: "auto", Endpoint: "https://acct.r2.cloudflarestorage.com", PathStyle: &off}, false},
		{"explicit on without endpoint", ClientOptions{Region: "us-east-1", PathStyle: &on}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(context.Background(), tt.o)
			if err != nil {
				t.Fatal(err)
			}
			o := c.Options()
			if o.UsePathStyle != tt.want {
				t.Fatalf("UsePathStyle = %v, want %v", o.UsePathStyle, tt.want)
			}
			if o.Region != tt.o.Region {
				t.Fatalf("Region = %q, want %q", o.Region, tt.o.Region)
			}
			if o.Retryer.MaxAttempts() != 1 {
				t.Fatalf("SDK retryer allows %d attempts; the uploader must own retries", o.Retryer.MaxAttempts())
			}
		})
	}
}

// Stream with OmitEmpty writes nothing for an empty body, and the body
// when there is one.
func TestStreamOmitEmpty(t *testing.T) {
	f := newFake()
	u := New(f, Options{Bucket: "b", Sleep: noSleep})
	res, err := u.Stream(context.Background(), Object{Key: "empty", OmitEmpty: true}, func(io.Writer) error { return nil })
	if err != nil || res != (Result{}) || len(f.calls) != 0 {
		t.Fatalf("empty: %+v, %v, calls %v; want nothing sent", res, err, f.calls)
	}
	res, err = u.Stream(context.Background(), Object{Key: "full", OmitEmpty: true}, func(w io.Writer) error {
		_, err := w.Write([]byte("x"))
		return err
	})
	if err != nil || res.Bytes != 1 || string(f.objects["full"]) != "x" {
		t.Fatalf("full: %+v, %v", res, err)
	}
}

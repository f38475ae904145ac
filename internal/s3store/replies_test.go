package s3store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is a small S3 stand-in for replies no real store gives: each
// operation is answered by the handler registered for it, or 200 with an
// empty body.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	seen     map[string]int
}

func newFakeServer(t *testing.T, handlers map[string]http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{handlers: handlers, seen: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := s3Op(r)
		f.mu.Lock()
		f.seen[op]++
		h := f.handlers[op]
		f.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		if h == nil {
			w.WriteHeader(http.StatusOK) // an "S3" that accepts anything
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[op]
}

// s3Op names the S3 operation of a path-style request.
func s3Op(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		return "CreateMultipartUpload"
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "UploadPart"
	case r.Method == http.MethodPost && q.Has("uploadId"):
		return "CompleteMultipartUpload"
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		return "AbortMultipartUpload"
	case r.Method == http.MethodGet && q.Has("uploads"):
		return "ListMultipartUploads"
	case r.Method == http.MethodPut:
		return "PutObject"
	case r.Method == http.MethodHead:
		return "HeadObject"
	case r.Method == http.MethodGet:
		return "GetObject"
	}
	return r.Method
}

func (f *fakeServer) uploader(t *testing.T, o Options) *Uploader {
	t.Helper()
	c, err := NewClient(context.Background(), ClientOptions{Region: "us-east-1", Endpoint: f.URL,
		AccessKeyID: "test", SecretAccessKey: "testtesttest", ResponseHeaderTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	o.Bucket = "b"
	if o.Sleep == nil {
		o.Sleep = noSleep
	}
	return New(c, o)
}

func createReply(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprint(w, `<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up-1</UploadId></InitiateMultipartUploadResult>`)
}

func md5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// A 2xx reply that does not prove the store took the bytes is a failed
// attempt: retried per policy, then an error naming the key and what was
// missing (issue 15, item 10).
func TestReplyWithoutProofIsNotAnUpload(t *testing.T) {
	small := []byte("some records")
	big := make([]byte, MinPartSize+1)
	tests := []unprovenReply{
		{"put: 200 with an empty body", nil, "", small, "PutObject", "no ETag"},
		{"put: ETag of other bytes", map[string]http.HandlerFunc{
			"PutObject": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("ETag", `"`+md5Hex([]byte("other"))+`"`)
			}}, "", small, "PutObject", "is not the MD5 of the 12 bytes sent"},
		{"put: SSE-KMS makes the ETag opaque", map[string]http.HandlerFunc{
			"PutObject": func(w http.ResponseWriter, r *http.Request) { w.Header().Set("ETag", `"kms-opaque"`) }},
			"aws:kms", small, "", ""},
		{"put: the bucket's default SSE-KMS makes the ETag opaque", map[string]http.HandlerFunc{
			"PutObject": func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("x-amz-server-side-encryption", "aws:kms")
				w.Header().Set("ETag", `"kms-opaque"`)
			}}, "", small, "", ""},
		{"put: the MD5 ETag", map[string]http.HandlerFunc{
			"PutObject": func(w http.ResponseWriter, r *http.Request) { w.Header().Set("ETag", `"`+md5Hex(small)+`"`) }},
			"", small, "", ""},
		{"create: no upload id", nil, "", big, "CreateMultipartUpload", "no upload id"},
		{"part: 200 with an empty body", map[string]http.HandlerFunc{"CreateMultipartUpload": createReply},
			"", big, "UploadPart", "no ETag"},
		{"complete: 200 with an empty body", map[string]http.HandlerFunc{
			"CreateMultipartUpload": createReply,
			"UploadPart": func(w http.ResponseWriter, r *http.Request) {
				// Parts 1 and 2 of big: MinPartSize bytes, then one.
				if r.URL.Query().Get("partNumber") == "1" {
					w.Header().Set("ETag", md5Hex(big[:MinPartSize]))
				} else {
					w.Header().Set("ETag", md5Hex(big[MinPartSize:]))
				}
			}}, "", big, "CompleteMultipartUpload", "no ETag"},
		{"complete: composite ETag of other parts", map[string]http.HandlerFunc{
			"CreateMultipartUpload": createReply,
			"UploadPart": func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("partNumber") == "1" {
					w.Header().Set("ETag", md5Hex(big[:MinPartSize]))
				} else {
					w.Header().Set("ETag", md5Hex(big[MinPartSize:]))
				}
			},
			"CompleteMultipartUpload": func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, `<CompleteMultipartUploadResult><Key>k</Key><ETag>"%s-2"</ETag></CompleteMultipartUploadResult>`, md5Hex([]byte("x")))
			}}, "", big, "CompleteMultipartUpload", "not the multipart ETag of the 2 parts sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// unprovenReply is a case of TestReplyWithoutProofIsNotAnUpload: the
// server's handlers, and the operation whose replies prove nothing.
type unprovenReply struct {
	name     string
	handlers map[string]http.HandlerFunc
	sse      string
	body     []byte
	wantOp   string
	want     string // in the error; "" = success
}

func (tt unprovenReply) run(t *testing.T) {
	srv := newFakeServer(t, tt.handlers)
	u := srv.uploader(t, Options{MaxAttempts: 3, PartSize: MinPartSize, MultipartThreshold: MinPartSize, ServerSideEncryption: tt.sse})
	res, err := u.Put(context.Background(), Object{Key: "iggy/k.jsonl"}, tt.body)
	if tt.want == "" {
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != tt.wantOp || e.Attempts != 3 || e.Status != 200 {
		t.Fatalf("Put = %+v, %v; want %s failing after 3 attempts with HTTP 200", res, err, tt.wantOp)
	}
	for _, want := range []string{"s3://b/iggy/k.jsonl", tt.want} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := srv.count(tt.wantOp); got != 3 {
		t.Fatalf("%s sent %d times, want 3", tt.wantOp, got)
	}
	if tt.wantOp == "UploadPart" || tt.wantOp == "CompleteMultipartUpload" {
		if srv.count("AbortMultipartUpload") != 1 {
			t.Fatalf("failed multipart upload not aborted: %v", srv.seen)
		}
	}
}

// A failed multipart upload is aborted, but the abort of a stalled store
// gives up after CleanupTimeout — measured from the caller's deadline when
// that has passed — instead of holding a Lambda past its time (issue 10,
// case 7).
func TestCleanupIsBounded(t *testing.T) {
	release := make(chan struct{})
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	refuse := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `<Error><Code>InvalidArgument</Code><Message>no</Message></Error>`)
	}
	const budget = 300 * time.Millisecond
	tests := []struct {
		name     string
		part     http.HandlerFunc
		deadline time.Duration // caller's deadline from the start; 0 = none
		within   time.Duration // Stream returns within this (plus slack)
	}{
		{"part refused, abort stalls", refuse, 0, budget},
		{"part stalls past the caller's deadline, abort stalls", stall, 200 * time.Millisecond, 200*time.Millisecond + budget},
	}
	defer close(release)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, map[string]http.HandlerFunc{
				"CreateMultipartUpload": createReply,
				"UploadPart":            tt.part,
				"AbortMultipartUpload":  stall,
			})
			u := srv.uploader(t, Options{PartSize: MinPartSize, CleanupTimeout: budget, Sleep: sleepCtx, RetryDelay: 50 * time.Millisecond})
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			start := time.Now()
			_, err := u.Stream(ctx, Object{Key: "k"}, streamBody(make([]byte, 2*MinPartSize)))
			took := time.Since(start)
			if err == nil {
				t.Fatal("Stream succeeded against a failing store")
			}
			if srv.count("AbortMultipartUpload") == 0 {
				t.Fatal("no abort was attempted")
			}
			// The bound is semantic (before: two minutes); the slack absorbs a
			// loaded machine.
			if limit := tt.within + 3*time.Second; took > limit {
				t.Fatalf("Stream returned after %v, want within %v", took, limit)
			}
			if !strings.Contains(err.Error(), "AbortMultipartUpload") {
				t.Fatalf("error %v does not report the failed abort", err)
			}
		})
	}
}

func TestCleanupContext(t *testing.T) {
	u := New(newFake(), Options{Bucket: "b", CleanupTimeout: 4 * time.Second})
	now := time.Now()
	tests := []struct {
		name     string
		deadline time.Duration // from now; 0 = none
		want     time.Duration // cleanup deadline from now
	}{
		{"no deadline", 0, 4 * time.Second},
		{"deadline far ahead", time.Minute, 4 * time.Second},
		{"deadline passed 3s ago", -3 * time.Second, time.Second},
		{"deadline passed 10s ago", -10 * time.Second, -6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tt.deadline != 0 {
				ctx, cancel = context.WithDeadline(context.Background(), now.Add(tt.deadline))
			}
			defer cancel()
			cctx, ccancel := cleanupContext(ctx, u.opts.CleanupTimeout)
			defer ccancel()
			d, ok := cctx.Deadline()
			if got := d.Sub(now); !ok || got < tt.want-time.Second/2 || got > tt.want+time.Second/2 {
				t.Fatalf("clean-up deadline %v from now, want about %v", got, tt.want)
			}
			cancel()
			if tt.want > 0 && cctx.Err() != nil {
				t.Fatal("clean-up context ended with the caller's")
			}
		})
	}
}

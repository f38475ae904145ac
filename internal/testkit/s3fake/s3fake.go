// Package s3fake is an in-process S3 for fast tests: gofakes3 over memory,
// with create-only writes enforced on every path and faults a test injects.
//
// gofakes3 honours If-None-Match on PutObject but not on
// CompleteMultipartUpload, and checks conditions without a lock; the wrapper
// serialises every mutating request and answers 412 itself when a create-only
// completion meets an existing key, as S3, MinIO and versitygw do.
package s3fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// Fault is what the server does with one request instead of answering it.
type Fault int

// Faults a test can inject.
const (
	Pass      Fault = iota // serve the request
	LoseReply              // apply the request, then answer 500 as if the reply was lost
	Fail                   // answer 500 without applying it
)

// Op names an S3 operation as the fault function sees it.
type Op string

// The operations the sink sends.
const (
	OpPut      Op = "PutObject"
	OpCreate   Op = "CreateMultipartUpload"
	OpPart     Op = "UploadPart"
	OpComplete Op = "CompleteMultipartUpload"
	OpAbort    Op = "AbortMultipartUpload"
	OpHead     Op = "HeadObject"
	OpGet      Op = "GetObject"
	OpList     Op = "ListObjectsV2"
	OpOther    Op = "Other"
)

// Server is a running in-process S3.
type Server struct {
	*testenv.S3
	backend *s3mem.Backend
	inner   http.Handler

	writes sync.Mutex // held across every mutating request

	mu    sync.Mutex
	fault func(op Op, key string) Fault
	count map[Op]int
}

// Start serves a fresh, empty store on a loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{backend: s3mem.New(), count: map[Op]int{}}
	s.inner = gofakes3.New(s.backend, gofakes3.WithIntegrityCheck(true)).Server()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.S3 = &testenv.S3{Endpoint: srv.URL, AccessKey: "fake", SecretKey: "fake-secret-key", Region: "us-east-1"}
	return s
}

// SetFault makes f decide the fate of every later request; nil serves all.
func (s *Server) SetFault(f func(op Op, key string) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests returns how many requests of op were received.
func (s *Server) Requests(op Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[op]
}

// Object returns the stored bytes of bucket/key, or false.
func (s *Server) Object(bucket, key string) ([]byte, bool) {
	obj, err := s.backend.GetObject(bucket, key, nil)
	if err != nil {
		return nil, false
	}
	defer obj.Contents.Close()
	b, err := io.ReadAll(obj.Contents)
	return b, err == nil
}

// Put stores bytes directly, bypassing every condition (a test planting an object).
func (s *Server) Put(ctx context.Context, bucket, key string, body []byte) error {
	s.writes.Lock()
	defer s.writes.Unlock()
	_, err := s.backend.PutObject(bucket, key, map[string]string{}, strings.NewReader(string(body)), int64(len(body)), nil)
	return err
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := classify(r)
	bucket, key := splitPath(r.URL.Path)
	s.mu.Lock()
	s.count[op]++
	f := Pass
	if s.fault != nil {
		f = s.fault(op, key)
	}
	s.mu.Unlock()
	if f == Fail {
		internalError(w)
		return
	}
	if mutating(op) {
		// The body is read before the lock, as a store takes a request in
		// before it commits it: a client slow to send (or holding its
		// last byte back, s3store.Gate) must not stall everyone else.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return // the client gave up: nothing is stored
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.writes.Lock()
		defer s.writes.Unlock()
	}
	out := w
	var lost *httptest.ResponseRecorder
	if f == LoseReply {
		lost = httptest.NewRecorder()
		out = lost
	}
	if op == OpComplete && r.Header.Get("If-None-Match") == "*" && s.exists(bucket, key) {
		preconditionFailed(out, key)
	} else {
		s.inner.ServeHTTP(out, r)
	}
	if lost != nil {
		internalError(w)
	}
}

func (s *Server) exists(bucket, key string) bool {
	_, err := s.backend.HeadObject(bucket, key)
	return err == nil
}

func mutating(op Op) bool {
	return op == OpPut || op == OpComplete || op == OpAbort || op == OpOther
}

func classify(r *http.Request) Op {
	q := r.URL.Query()
	switch r.Method {
	case http.MethodPut:
		if q.Has("partNumber") {
			return OpPart
		}
		if _, key := splitPath(r.URL.Path); key != "" {
			return OpPut
		}
	case http.MethodPost:
		if q.Has("uploads") {
			return OpCreate
		}
		if q.Has("uploadId") {
			return OpComplete
		}
	case http.MethodDelete:
		if q.Has("uploadId") {
			return OpAbort
		}
	case http.MethodHead:
		return OpHead
	case http.MethodGet:
		if _, key := splitPath(r.URL.Path); key != "" {
			return OpGet
		}
		if q.Get("list-type") == "2" {
			return OpList
		}
	}
	return OpOther
}

// splitPath reads a path-style URL: /bucket/key...
func splitPath(p string) (bucket, key string) {
	p = strings.TrimPrefix(p, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

func internalError(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusInternalServerError)
	io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected by the test</Message></Error>`)
}

func preconditionFailed(w http.ResponseWriter, key string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusPreconditionFailed)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Key>%s</Key></Error>`, key)
}

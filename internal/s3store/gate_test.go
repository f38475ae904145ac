package s3store

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// countingTransport counts the request body bytes the HTTP transport has
// read (that is, sent or is sending) for PutObject and UploadPart. It
// sends through the client's own transport, so a body that writes itself
// to the connection (fencedBody.WriteTo, through bodyConn) still does.
type countingTransport struct {
	sent atomic.Int64
	next http.RoundTripper
}

func newCountingTransport() *countingTransport {
	tr := awshttp.NewBuildableClient().GetTransport()
	transportOptions(DefaultResponseHeaderTimeout)(tr)
	return &countingTransport{next: tr}
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Method == http.MethodPut {
		if _, ok := r.Body.(io.WriterTo); ok {
			r.Body = countingWriterToBody{countingBody{r.Body, &c.sent}}
		} else {
			r.Body = countingBody{r.Body, &c.sent}
		}
	}
	return c.next.RoundTrip(r)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

type countingWriterToBody struct{ countingBody }

func (b countingWriterToBody) WriteTo(w io.Writer) (int64, error) {
	return b.ReadCloser.(io.WriterTo).WriteTo(countingWriter{w, b.n})
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// gatedUploader is the production client over a real store, through a
// transport that counts the body bytes sent.
func gatedUploader(t *testing.T, start func(testing.TB) *testenv.S3, o Options) (*store, *Uploader, *countingTransport) {
	t.Helper()
	t.Setenv("AWS_CA_BUNDLE", "") // the client is the test's own
	srv := start(t)
	srv.CreateBucket(t, bucket)
	ct := newCountingTransport()
	c, err := NewClient(context.Background(), ClientOptions{Region: srv.Region, Endpoint: srv.Endpoint,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	o.Bucket = bucket
	return &store{srv: srv, direct: srv.Client(t)}, New(c, o), ct
}

// waitSent waits until the transport has read n body bytes.
func waitSent(t *testing.T, ct *countingTransport, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for ct.sent.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the upload sent %d body bytes before its gate opened, want %d", ct.sent.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// listed reports whether key is in the bucket's listing. While a PUT of
// key is in flight MinIO holds the key's lock, and a HeadObject of it
// waits (30 s, then both fail); a listing does not.
func listed(t *testing.T, st *store, key string) bool {
	t.Helper()
	out, err := st.direct.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatalf("ListObjectsV2 %s: %v", key, err)
	}
	for _, o := range out.Contents {
		if aws.ToString(o.Key) == key {
			return true
		}
	}
	return false
}

// A gated PutObject sends all of its body but the last byte while the
// gate is closed (over plain HTTP, where the payload is signed), and the
// store holds no object then; opened, the object lands whole. Failed, the
// upload ends at once (no retry) and nothing is stored.
func TestGateHoldsTheLastByte(t *testing.T) {
	for _, s := range realStores {
		t.Run(s.name, func(t *testing.T) {
			st, u, ct := gatedUploader(t, s.start, Options{})
			body := randomBytes(7, 1<<20)
			for _, open := range []bool{true, false} {
				key := "gated/failed"
				if open {
					key = "gated/opened"
				}
				ct.sent.Store(0)
				gate := NewGate()
				type outcome struct {
					res Result
					err error
				}
				done := make(chan outcome, 1)
				go func() {
					res, err := u.Put(context.Background(), Object{Key: key, Gate: gate}, body)
					done <- outcome{res, err}
				}()
				waitSent(t, ct, int64(len(body)-1))
				time.Sleep(50 * time.Millisecond) // a last byte sent anyway would land meanwhile
				if got := ct.sent.Load(); got != int64(len(body)-1) {
					t.Fatalf("%s: %d body bytes sent before the gate opened, want %d", key, got, len(body)-1)
				}
				if listed(t, st, key) {
					t.Fatalf("%s is stored before its gate opened", key)
				}
				if open {
					gate.Open()
				} else {
					gate.Fail(errors.New("intent not recorded"))
				}
				o := <-done
				switch {
				case open && o.err != nil:
					t.Fatalf("%s: %v", key, o.err)
				case open && string(st.get(t, key)) != string(body):
					t.Fatalf("%s: the stored object differs from the body", key)
				case open:
					continue
				case !errors.Is(o.err, ErrGateFailed) || !strings.Contains(o.err.Error(), "intent not recorded"):
					t.Fatalf("%s: err = %v, want ErrGateFailed with its cause", key, o.err)
				case o.res.Attempts > 1:
					t.Fatalf("%s: %d attempts after the gate failed, want 1", key, o.res.Attempts)
				case st.exists(t, key):
					t.Fatalf("%s is stored although its gate failed", key)
				}
			}
		})
	}
}

// A gated multipart upload, and a gated empty object, start only when the
// gate opens: no part is stored (or billed) for an object that may not be
// written.
func TestGateHoldsMultipartAndEmpty(t *testing.T) {
	st, u, ct := gatedUploader(t, testenv.StartVersity, Options{MultipartThreshold: MinPartSize, PartSize: MinPartSize})
	for _, body := range [][]byte{randomBytes(8, MinPartSize+1), {}} {
		ct.sent.Store(0)
		gate := NewGate()
		done := make(chan error, 1)
		go func() {
			_, err := u.Put(context.Background(), Object{Key: "gated/whole", Gate: gate}, body)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond)
		if n := ct.sent.Load(); n != 0 || st.openUploads(t) != 0 || listed(t, st, "gated/whole") {
			t.Fatalf("%d-byte object: %d bytes sent, %d uploads open before the gate opened", len(body), n, st.openUploads(t))
		}
		gate.Open()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := st.get(t, "gated/whole"); len(got) != len(body) {
			t.Fatalf("stored %d bytes, want %d", len(got), len(body))
		}
		if _, err := st.direct.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("gated/whole")}); err != nil {
			t.Fatal(err)
		}
	}
}

// A gated PutObject whose context ends while it is held returns at once,
// with nothing stored: the held read wakes without the gate settling.
func TestGateHeldUploadEndsWithItsContext(t *testing.T) {
	st, u, ct := gatedUploader(t, testenv.StartVersity, Options{})
	body := randomBytes(9, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := u.Put(ctx, Object{Key: "gated/cancelled", Gate: NewGate()}, body)
		done <- err
	}()
	waitSent(t, ct, int64(len(body)-1))
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a held upload whose context ended succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a held upload did not return when its context ended (its gate never settles)")
	}
	if listed(t, st, "gated/cancelled") {
		t.Fatal("gated/cancelled is stored although its context ended before the gate opened")
	}
}

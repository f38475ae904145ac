package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/faultproxy"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

const bucket = "sink-test"

// store is a versitygw with one bucket, and a direct client to inspect it.
type store struct {
	srv    *testenv.S3
	direct *s3.Client
}

func startStore(t testing.TB) *store {
	t.Helper()
	srv := testenv.StartVersity(t)
	srv.CreateBucket(t, bucket)
	return &store{srv: srv, direct: srv.Client(t)}
}

// client builds the production client (NewClient) against endpoint.
func (s *store) client(t testing.TB, endpoint string, headerTimeout time.Duration) *s3.Client {
	t.Helper()
	c, err := NewClient(context.Background(), ClientOptions{
		Region: s.srv.Region, Endpoint: endpoint,
		AccessKeyID: s.srv.AccessKey, SecretAccessKey: s.srv.SecretKey,
		ResponseHeaderTimeout: headerTimeout,
	})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func (s *store) get(t testing.TB, key string) []byte {
	t.Helper()
	out, err := s.direct.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return data
}

func (s *store) exists(t testing.TB, key string) bool {
	t.Helper()
	_, err := s.direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err == nil {
		return true
	}
	if httpStatus(err) != 404 {
		t.Fatalf("HeadObject %s: %v", key, err)
	}
	return false
}

// fresh deletes key, outside the benchmark's timer, so that the next
// create-only write of it is a real write; a few keys are reused so the
// store's disk does not fill up.
func (s *store) fresh(b *testing.B, key string) string {
	b.StopTimer()
	defer b.StartTimer()
	if _, err := s.direct.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		b.Fatalf("DeleteObject %s: %v", key, err)
	}
	return key
}

func (s *store) openUploads(t testing.TB) int {
	t.Helper()
	out, err := s.direct.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	return len(out.Uploads)
}

func randomBytes(seed uint64, n int) []byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

func TestPutReadsBackIntact(t *testing.T) {
	st := startStore(t)
	u := New(st.client(t, st.srv.Endpoint, 0), Options{Bucket: bucket, PartSize: MinPartSize, MultipartThreshold: MinPartSize})
	tests := []struct {
		name      string
		size      int
		multipart bool
		parts     int
	}{
		{"empty", 0, false, 0},
		{"small", 1500, false, 0},
		{"at threshold", MinPartSize, false, 0},
		{"multipart", 2*MinPartSize + 12345, true, 3},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := randomBytes(uint64(i), tt.size)
			key := "put/" + strings.ReplaceAll(tt.name, " ", "-") + ".bin"
			res, err := u.Put(context.Background(), Object{Key: key, ContentType: "application/octet-stream"}, body)
			if err != nil {
				t.Fatalf("Put: %v", err)
			}
			if res.Multipart != tt.multipart || res.Parts != tt.parts || res.Bytes != int64(tt.size) || res.Retries != 0 {
				t.Fatalf("result %+v", res)
			}
			if got := st.get(t, key); sha256.Sum256(got) != sha256.Sum256(body) {
				t.Fatalf("read back %d bytes, sha256 differs from the %d put", len(got), len(body))
			}
			viaGet, err := u.Get(context.Background(), key)
			if err != nil || !bytes.Equal(viaGet, body) {
				t.Fatalf("Uploader.Get: %d bytes, %v", len(viaGet), err)
			}
		})
	}
	if n := st.openUploads(t); n != 0 {
		t.Fatalf("%d multipart uploads left open", n)
	}
}

func TestStreamHoldsAtMostTwoParts(t *testing.T) {
	st := startStore(t)
	u := New(st.client(t, st.srv.Endpoint, 0), Options{Bucket: bucket, PartSize: MinPartSize})
	const size = 3*MinPartSize + 777
	body := randomBytes(7, size)
	var peak int64
	res, err := u.Stream(context.Background(), Object{Key: "stream/big.bin"}, func(w io.Writer) error {
		for off := 0; off < size; off += 100_000 {
			if _, err := w.Write(body[off:min(off+100_000, size)]); err != nil {
				return err
			}
			peak = max(peak, u.liveBuffers.Load())
			if peak > 2*MinPartSize {
				return fmt.Errorf("uploader holds %d bytes of buffers, more than 2 parts", peak)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if !res.Multipart || res.Parts != 4 || res.Bytes != size {
		t.Fatalf("result %+v, want 4 parts of %d bytes", res, size)
	}
	if peak != 2*MinPartSize {
		// A second buffer is filled while the first uploads; without it
		// encoding and upload would not overlap.
		t.Fatalf("peak buffer bytes %d, want exactly two parts (%d)", peak, 2*MinPartSize)
	}
	if got := st.get(t, "stream/big.bin"); sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatalf("read back %d bytes, sha256 differs", len(got))
	}
	if u.liveBuffers.Load() != 0 {
		t.Fatalf("buffers still counted after Stream: %d bytes", u.liveBuffers.Load())
	}
}

func TestStreamFailureLeavesNothing(t *testing.T) {
	st := startStore(t)
	u := New(st.client(t, st.srv.Endpoint, 0), Options{Bucket: bucket, PartSize: MinPartSize})
	errEncoder := errors.New("encoder broke")
	tests := []struct {
		name  string
		write func(ctx context.Context, cancel context.CancelFunc, w io.Writer) error
		want  error
	}{
		{"writer fails after two parts", func(_ context.Context, _ context.CancelFunc, w io.Writer) error {
			if _, err := w.Write(randomBytes(1, 2*MinPartSize+10)); err != nil {
				return err
			}
			return errEncoder
		}, errEncoder},
		{"context cancelled mid-stream", func(_ context.Context, cancel context.CancelFunc, w io.Writer) error {
			if _, err := w.Write(randomBytes(2, MinPartSize+10)); err != nil {
				return err
			}
			cancel()
			_, err := w.Write(randomBytes(3, MinPartSize))
			return err
		}, context.Canceled},
		{"writer fails before one part", func(_ context.Context, _ context.CancelFunc, w io.Writer) error {
			_, _ = w.Write([]byte("partial"))
			return errEncoder
		}, errEncoder},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("fail/%d.bin", i)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := u.Stream(ctx, Object{Key: key}, func(w io.Writer) error { return tt.write(ctx, cancel, w) })
			if !errors.Is(err, tt.want) {
				t.Fatalf("Stream error = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), key) {
				t.Fatalf("error %q does not name the key", err)
			}
			if st.exists(t, key) {
				t.Fatal("object exists after a failed stream")
			}
			if n := st.openUploads(t); n != 0 {
				t.Fatalf("%d orphaned multipart uploads", n)
			}
		})
	}
}

func TestList(t *testing.T) {
	st := startStore(t)
	u := New(st.client(t, st.srv.Endpoint, 0), Options{Bucket: bucket})
	ctx := context.Background()
	want := map[string]int64{}
	for i := 0; i < 5; i++ {
		key := fmt.Sprintf("list/p%d/%05d.jsonl", i%2, i)
		if _, err := u.Put(ctx, Object{Key: key}, make([]byte, i*10)); err != nil {
			t.Fatal(err)
		}
		want[key] = int64(i * 10)
	}
	if _, err := u.Put(ctx, Object{Key: "other/x"}, []byte("x")); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var order []string
	if err := u.List(ctx, "list/", func(key string, size int64) error {
		got[key] = size
		order = append(order, key)
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] >= order[i] {
			t.Fatalf("keys not in order: %v", order)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := u.List(ctx, "list/", func(string, int64) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("List after fn error: err=%v calls=%d", err, calls)
	}
}

// recordingSleep records the backoff delays instead of sleeping them.
type recordingSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (r *recordingSleep) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.delays = append(r.delays, d)
	r.mu.Unlock()
	return ctx.Err()
}

func TestFaultsEverythingLands(t *testing.T) {
	for _, seed := range []int64{7, 2026} {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { faultsEverythingLands(t, seed) })
	}
}

func faultsEverythingLands(t *testing.T, seed int64) {
	st := startStore(t)
	// 30% of requests meet a fault: 10% each of 5xx, reset, stall.
	proxy, err := faultproxy.Start(st.srv.Endpoint, faultproxy.Config{
		Seed: seed, ErrorRate: 0.1, ResetRate: 0.1, StallRate: 0.1, Stall: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var logs bytes.Buffer
	u := New(st.client(t, proxy.URL(), 500*time.Millisecond), Options{
		Bucket: bucket, MaxAttempts: 8, RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 200 * time.Millisecond,
		PartSize: MinPartSize, MultipartThreshold: MinPartSize,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs}, nil)),
	})
	bodies, retries := uploadUnderFaults(t, u, proxy)
	stats := proxy.Stats()
	t.Logf("proxy %+v, uploader retries %d", stats, retries)
	if stats.Errors == 0 || stats.Resets == 0 || stats.Stalls == 0 {
		t.Fatalf("not every fault kind was exercised: %+v", stats)
	}
	if retries == 0 {
		t.Fatal("faults injected but no retries counted")
	}
	for key, body := range bodies {
		if got := st.get(t, key); sha256.Sum256(got) != sha256.Sum256(body) {
			t.Fatalf("%s: read back %d bytes, want %d identical", key, len(got), len(body))
		}
	}
	if n := st.openUploads(t); n != 0 {
		t.Fatalf("%d multipart uploads left open", n)
	}
	if strings.Contains(logs.String(), st.srv.SecretKey) {
		t.Fatal("a log line contains the secret key")
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Fatal("retries were not logged")
	}
}

// uploadUnderFaults writes 40 objects through proxy, of each write path
// (Put, Put as multipart, Stream as multipart), and returns their bodies
// by key and the retries they took.
func uploadUnderFaults(t *testing.T, u *Uploader, proxy *faultproxy.Proxy) (map[string][]byte, int) {
	t.Helper()
	ctx := context.Background()
	bodies := map[string][]byte{}
	var retries int
	for i := 0; i < 40; i++ {
		key := fmt.Sprintf("faults/%03d.bin", i)
		var res Result
		var err error
		switch {
		case i%20 == 9: // multipart, streamed
			body := randomBytes(uint64(100+i), 2*MinPartSize+i)
			bodies[key] = body
			res, err = u.Stream(ctx, Object{Key: key}, func(w io.Writer) error {
				_, err := io.Copy(w, bytes.NewReader(body))
				return err
			})
		case i%20 == 4: // multipart from memory
			body := randomBytes(uint64(100+i), MinPartSize+1000)
			bodies[key] = body
			res, err = u.Put(ctx, Object{Key: key}, body)
		default:
			body := randomBytes(uint64(100+i), 1000+i*997)
			bodies[key] = body
			res, err = u.Put(ctx, Object{Key: key}, body)
		}
		if err != nil {
			t.Fatalf("%s: %v (proxy %+v)", key, err, proxy.Stats())
		}
		retries += res.Retries
	}
	return bodies, retries
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestRetriesBoundedWithBackoff(t *testing.T) {
	st := startStore(t)
	proxy, err := faultproxy.Start(st.srv.Endpoint, faultproxy.Config{ErrorRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const attempts = 7
	base, ceiling := 10*time.Millisecond, 50*time.Millisecond
	rec := &recordingSleep{}
	u := New(st.client(t, proxy.URL(), time.Second), Options{
		Bucket: bucket, MaxAttempts: attempts, RetryDelay: base, MaxRetryDelay: ceiling, Sleep: rec.sleep})
	_, err = u.Put(context.Background(), Object{Key: "bounded/k"}, []byte("data"))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Put error = %v, want *s3store.Error", err)
	}
	if e.Attempts != attempts || (e.Status != 500 && e.Status != 503) || e.Op != "PutObject" {
		t.Fatalf("error %+v, want PutObject 5xx after %d attempts", e, attempts)
	}
	if got := proxy.Stats().Requests; got != attempts {
		t.Fatalf("proxy saw %d requests, want exactly %d", got, attempts)
	}
	if len(rec.delays) != attempts-1 {
		t.Fatalf("slept %d times, want %d", len(rec.delays), attempts-1)
	}
	for i, d := range rec.delays {
		nominal := min(base<<i, ceiling)
		lo, hi := time.Duration(float64(nominal)*0.8), time.Duration(float64(nominal)*1.2)
		if d < lo || d > hi {
			t.Errorf("delay %d = %v, want within [%v, %v] (nominal %v)", i+1, d, lo, hi, nominal)
		}
	}
	// Jitter: the capped tail delays share one nominal value; identical
	// draws for all of them would mean no jitter.
	tail := rec.delays[3:]
	same := true
	for _, d := range tail[1:] {
		same = same && d == tail[0]
	}
	if same {
		t.Errorf("capped delays %v are identical: no jitter", tail)
	}
	if st.exists(t, "bounded/k") {
		t.Fatal("object exists although every request failed")
	}
}

func TestForbiddenFailsFast(t *testing.T) {
	st := startStore(t)
	proxy, err := faultproxy.Start(st.srv.Endpoint, faultproxy.Config{Forbid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	rec := &recordingSleep{}
	u := New(st.client(t, proxy.URL(), time.Second), Options{Bucket: bucket, MaxAttempts: 8, RetryDelay: time.Second, Sleep: rec.sleep})
	for _, tt := range []struct {
		name string
		run  func() error
	}{
		{"Put", func() error { _, err := u.Put(context.Background(), Object{Key: "denied/k"}, []byte("x")); return err }},
		{"Stream", func() error {
			_, err := u.Stream(context.Background(), Object{Key: "denied/k"}, func(w io.Writer) error {
				_, err := w.Write([]byte("x"))
				return err
			})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := proxy.Stats().Requests
			err := tt.run()
			var e *Error
			if !errors.As(err, &e) || e.Status != 403 || e.Attempts != 1 {
				t.Fatalf("error = %v, want a 403 after 1 attempt", err)
			}
			for _, want := range []string{bucket, "denied/k", "403", "AccessDenied"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if n := proxy.Stats().Requests - before; n != 1 {
				t.Fatalf("proxy saw %d requests, want 1", n)
			}
		})
	}
	if len(rec.delays) != 0 {
		t.Fatalf("slept %v before failing", rec.delays)
	}
}

func TestWrongSecretIsNotRevealed(t *testing.T) {
	st := startStore(t)
	const wrong = "WrongSecretKeyNeverToBeShown123"
	c, err := NewClient(context.Background(), ClientOptions{Region: "us-east-1", Endpoint: st.srv.Endpoint,
		AccessKeyID: st.srv.AccessKey, SecretAccessKey: wrong})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	u := New(c, Options{Bucket: bucket, MaxAttempts: 3, Sleep: noSleep,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	_, err = u.Put(context.Background(), Object{Key: "secret/k"}, []byte("x"))
	var e *Error
	if !errors.As(err, &e) || e.Status != 403 || e.Attempts != 1 {
		t.Fatalf("error = %v, want a 403 after 1 attempt", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(fmt.Sprintf("%+v %#v", err, e), wrong) {
		t.Fatal("the error reveals the secret key")
	}
	if strings.Contains(logs.String(), wrong) {
		t.Fatal("the log reveals the secret key")
	}
}

// BenchmarkPutObject measures single-PutObject throughput of 8 MiB objects
// to versitygw, the baseline for the drain benchmarks' ratios.
func BenchmarkPutObject(b *testing.B) {
	st := startStore(b)
	u := New(st.client(b, st.srv.Endpoint, 0), Options{Bucket: bucket, MultipartThreshold: 64 << 20})
	body := randomBytes(1, 8<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		key := st.fresh(b, fmt.Sprintf("bench/%d", i%8))
		if res, err := u.Put(context.Background(), Object{Key: key}, body); err != nil || res.Existed {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkPutObjectSDK sends the same objects with the SDK's PutObject
// alone (same client, same condition, no checksum, no reply check): the
// uploader's cost on the upload path is BenchmarkPutObject's ratio to it.
func BenchmarkPutObjectSDK(b *testing.B) {
	st := startStore(b)
	c := st.client(b, st.srv.Endpoint, 0)
	body := randomBytes(1, 8<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		key := st.fresh(b, fmt.Sprintf("bench/%d", i%8))
		_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*")})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream measures Stream of 32 MiB objects in 8 MiB parts (encoding
// overlapped with upload), to compare with BenchmarkPutObject.
func BenchmarkStream(b *testing.B) {
	st := startStore(b)
	u := New(st.client(b, st.srv.Endpoint, 0), Options{Bucket: bucket, PartSize: 8 << 20})
	body := randomBytes(1, 32<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		key := st.fresh(b, fmt.Sprintf("bench/s%d", i%4))
		_, err := u.Stream(context.Background(), Object{Key: key}, func(w io.Writer) error {
			for off := 0; off < len(body); off += 64 << 10 {
				if _, err := w.Write(body[off : off+64<<10]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPutMultipart sends the same 32 MiB objects as BenchmarkStream from
// memory, part after part: Stream's cost over it is the pipeline's, the rest
// is the store's multipart cost.
func BenchmarkPutMultipart(b *testing.B) {
	st := startStore(b)
	u := New(st.client(b, st.srv.Endpoint, 0), Options{Bucket: bucket, PartSize: 8 << 20, MultipartThreshold: 8 << 20})
	body := randomBytes(1, 32<<20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		key := st.fresh(b, fmt.Sprintf("bench/m%d", i%4))
		if res, err := u.Put(context.Background(), Object{Key: key}, body); err != nil || res.Existed {
			b.Fatal(res, err)
		}
	}
}

// A part that keeps failing: exactly MaxAttempts UploadPart requests reach
// the proxy, then the upload is aborted (the abort itself is not faulted).
func TestFailingPartIsBoundedAndAborted(t *testing.T) {
	st := startStore(t)
	proxy, err := faultproxy.Start(st.srv.Endpoint, faultproxy.Config{
		ErrorRate: 1,
		Only: func(r *http.Request) bool {
			return r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const attempts = 4
	u := New(st.client(t, proxy.URL(), time.Second), Options{Bucket: bucket, MaxAttempts: attempts,
		RetryDelay: time.Millisecond, PartSize: MinPartSize})
	body := randomBytes(5, 3*MinPartSize)
	_, err = u.Stream(context.Background(), Object{Key: "part/k"}, func(w io.Writer) error {
		_, err := w.Write(body)
		return err
	})
	var e *Error
	if !errors.As(err, &e) || e.Op != "UploadPart" || e.Attempts != attempts || e.Status < 500 {
		t.Fatalf("error = %v, want UploadPart 5xx after %d attempts", err, attempts)
	}
	if got := proxy.Stats().Errors; got != attempts {
		t.Fatalf("proxy failed %d part-2 requests, want exactly %d", got, attempts)
	}
	if st.exists(t, "part/k") {
		t.Fatal("object exists after the part failed")
	}
	if n := st.openUploads(t); n != 0 {
		t.Fatalf("%d orphaned multipart uploads", n)
	}
}

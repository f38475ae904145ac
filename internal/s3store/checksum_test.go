package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/faultproxy"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// checksumStores say what each store does with a CRC32C sent with a body:
// verifies it (refuses a body that does not match: BadDigest) and echoes it
// in the reply (which is how the uploader knows it was verified). The
// README's checksum table is this list.
var checksumStores = []struct {
	name             string
	verifies, echoes bool
}{
	{"versitygw", true, true},
	{"minio", true, true},
	{"moto_server", false, false},
	{"gofakes3", false, false},
}

// unsignedClient is the production client with payload signing off, as over
// HTTPS: nothing but the checksum guards the body on the way.
func unsignedClient(t testing.TB, endpoint, access, secret, region string) *s3.Client {
	t.Helper()
	off := false
	c, err := NewClient(context.Background(), ClientOptions{Region: region, Endpoint: endpoint,
		AccessKeyID: access, SecretAccessKey: secret, ResponseHeaderTimeout: 5 * time.Second, SignPayload: &off})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A proxy that flips a byte of every body: on each store the upload fails
// (after MaxAttempts, naming the operation), and no object holds the
// corrupted bytes. With one corrupted attempt only, the retry stores the
// body intact. Payloads are unsigned, so only the checksum (or, where the
// store verifies none, the MD5 ETag) can tell.
func TestCorruptedUploadIsRefused(t *testing.T) {
	for _, st := range s3Stores {
		want := storeChecksums(t, st.name)
		t.Run(st.name, func(t *testing.T) {
			srv := st.start(t)
			srv.CreateBucket(t, bucket)
			direct := srv.Client(t)
			// A clean upload tells whether the store echoes the CRC32C.
			clean := New(unsignedClient(t, srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region), Options{Bucket: bucket, Sleep: noSleep})
			if _, err := clean.Put(context.Background(), Object{Key: "clean"}, randomBytes(8, 1000)); err != nil {
				t.Fatal(err)
			}
			if echoed := !clean.checksums.md5Only.Load(); echoed != want.echoes {
				t.Fatalf("the store echoed the CRC32C: %v, want %v", echoed, want.echoes)
			}
			for _, tc := range []corruptedUpload{
				{"put", 70_000, "PutObject"},
				{"multipart", MinPartSize + 70_000, "UploadPart"},
			} {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, srv, direct, want) })
			}
		})
	}
}

// corruptedUpload is a case of TestCorruptedUploadIsRefused: a body of size
// bytes, whose corruption op is refused for (where the store verifies).
type corruptedUpload struct {
	name string
	size int
	op   string
}

func (tc corruptedUpload) run(t *testing.T, srv *testenv.S3, direct *s3.Client, want struct{ verifies, echoes bool }) {
	body := randomBytes(7, tc.size)
	only := func(r *http.Request) bool { return r.Method == http.MethodPut }
	proxy, err := faultproxy.Start(srv.Endpoint, faultproxy.Config{CorruptRate: 1, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const attempts = 2
	u := New(unsignedClient(t, proxy.URL(), srv.AccessKey, srv.SecretKey, srv.Region),
		Options{Bucket: bucket, MaxAttempts: attempts, Sleep: noSleep, PartSize: MinPartSize, MultipartThreshold: MinPartSize})
	key := "corrupt/" + tc.name
	_, err = u.Put(context.Background(), Object{Key: key}, body)
	var e *Error
	if !want.verifies {
		// The store keeps the corrupted body; the ETag check
		// fails the attempts, and the retry meets the object.
		if err == nil {
			t.Fatal("a corrupted upload succeeded")
		}
		got, ok := readObject(t, direct, key)
		if ok && bytes.Equal(got, body) {
			t.Fatal("the store holds the body intact although every attempt was corrupted")
		}
		return
	}
	if !errors.As(err, &e) || e.Op != tc.op || e.Status != 400 || e.Attempts != attempts {
		t.Fatalf("error = %v, want %s refused (400) after %d attempts", err, tc.op, attempts)
	}
	if _, ok := readObject(t, direct, key); ok {
		t.Fatal("an object exists after every attempt was corrupted")
	}
	if n := proxy.Stats().Corrupted; n < attempts {
		t.Fatalf("the proxy corrupted %d requests, want at least %d", n, attempts)
	}
	healOnRetry(t, proxy, u, direct, key+"-healed", body)
}

// healOnRetry checks that with one corrupted attempt only, the retry gets
// the body to key whole.
func healOnRetry(t *testing.T, proxy *faultproxy.Proxy, u *Uploader, direct *s3.Client, key string, body []byte) {
	t.Helper()
	corrupted := false
	if err := proxy.Set(faultproxy.Config{CorruptRate: 1, Only: func(r *http.Request) bool {
		if r.Method != http.MethodPut || corrupted {
			return false
		}
		corrupted = true
		return true
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := u.Put(context.Background(), Object{Key: key}, body)
	if err != nil || res.Retries != 1 || res.Existed {
		t.Fatalf("Put = %+v, %v; want success after one retry", res, err)
	}
	if got, ok := readObject(t, direct, key); !ok || !bytes.Equal(got, body) {
		t.Fatal("the healed upload does not hold the body")
	}
}

// readObject reads the object at key through direct; false when there is
// none.
func readObject(t *testing.T, direct *s3.Client, key string) ([]byte, bool) {
	t.Helper()
	out, err := direct.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if httpStatus(err) == 404 || isCode(err, "NoSuchKey") {
		return nil, false
	}
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(out.Body)
	return b.Bytes(), true
}

func storeChecksums(t *testing.T, name string) struct{ verifies, echoes bool } {
	for _, s := range checksumStores {
		if s.name == name {
			return struct{ verifies, echoes bool }{s.verifies, s.echoes}
		}
	}
	t.Fatalf("store %s is missing from checksumStores", name)
	return struct{ verifies, echoes bool }{}
}

// What the uploader does with each kind of reply to a body sent with its
// CRC32C, against a stand-in server (replies no real store here gives).
func TestChecksumReplies(t *testing.T) {
	small := []byte("some records")
	echo := func(v string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"`+md5Hex(small)+`"`)
			if v != "" {
				w.Header().Set("x-amz-checksum-crc32c", v)
			}
		}
	}
	refuse := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-amz-checksum-crc32c") != "" { // Backblaze B2's reply
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `<Error><Code>InvalidArgument</Code><Message>Unsupported header 'x-amz-checksum-crc32c' received for this API call.</Message></Error>`)
			return
		}
		echo("")(w, r)
	}
	mismatch := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `<Error><Code>BadDigest</Code><Message>The CRC32C you specified did not match the calculated checksum.</Message></Error>`)
	}
	tests := []checksumReply{
		{"the store echoes the checksum", "", echo(encodeCRC(crc32c(small))), "", 1, false, true},
		{"the echo is another checksum", "", echo(encodeCRC(crc32c(small) + 1)), "is not the checksum of the 12 bytes sent", 3, false, true},
		{"no echo: the MD5 ETag proves it", "", echo(""), "", 1, true, true},
		{"the store refuses the header: sent again without, at once", "", refuse, "", 2, true, false},
		{"a mismatch is corruption on the way: retried", "", mismatch, "BadDigest", 3, false, true},
		{"md5 mode sends no checksum", ChecksumMD5, echo(""), "", 1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, small) })
	}
}

// checksumReply is a case of TestChecksumReplies: how the server answers
// a PutObject, and what the uploader makes of it.
type checksumReply struct {
	name      string
	mode      string
	put       http.HandlerFunc
	wantErr   string // "" = success
	puts      int    // PutObject requests the server saw
	md5After  bool   // the uploader proves by MD5 afterwards
	headerOut bool   // the last request carried the CRC32C
}

func (tt checksumReply) run(t *testing.T, body []byte) {
	var lastHeader string
	srv := newFakeServer(t, map[string]http.HandlerFunc{"PutObject": func(w http.ResponseWriter, r *http.Request) {
		lastHeader = r.Header.Get("x-amz-checksum-crc32c")
		tt.put(w, r)
	}})
	u := srv.uploader(t, Options{MaxAttempts: 3, Checksum: tt.mode})
	res, err := u.Put(context.Background(), Object{Key: "k"}, body)
	if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
		t.Fatalf("Put = %+v, %v; want error containing %q", res, err, tt.wantErr)
	}
	if n := srv.count("PutObject"); n != tt.puts {
		t.Fatalf("the server saw %d PutObject requests, want %d", n, tt.puts)
	}
	if tt.wantErr == "" && res.Retries != 0 {
		t.Fatalf("retries = %d, want 0", res.Retries)
	}
	if got := u.checksums.md5Only.Load(); got != tt.md5After {
		t.Fatalf("MD5 fallback = %v, want %v", got, tt.md5After)
	}
	if (lastHeader != "") != tt.headerOut {
		t.Fatalf("the last request's x-amz-checksum-crc32c = %q, want it sent: %v", lastHeader, tt.headerOut)
	}
}

// A multipart upload with CRC32C: each part and the completion carry their
// checksums, the completion the whole object's (FULL_OBJECT), and a
// completion echo of another checksum fails the attempt.
func TestMultipartChecksums(t *testing.T) {
	body := randomBytes(9, MinPartSize+100)
	whole := encodeCRC(crc32c(body))
	for _, tt := range []struct {
		name, completeEcho, wantErr string
	}{
		{"echoed", whole, ""},
		{"another object checksum", encodeCRC(crc32c(body) ^ 1), "is not the checksum of the 5242980 bytes sent in 2 parts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var createAlgo, createType, completeCRC, completeType string
			var partHeaders []string
			srv := newFakeServer(t, map[string]http.HandlerFunc{
				"CreateMultipartUpload": func(w http.ResponseWriter, r *http.Request) {
					createAlgo, createType = r.Header.Get("x-amz-checksum-algorithm"), r.Header.Get("x-amz-checksum-type")
					createReply(w, r)
				},
				"UploadPart": func(w http.ResponseWriter, r *http.Request) {
					v := r.Header.Get("x-amz-checksum-crc32c")
					partHeaders = append(partHeaders, v)
					w.Header().Set("ETag", `"x"`)
					w.Header().Set("x-amz-checksum-crc32c", v)
				},
				"CompleteMultipartUpload": func(w http.ResponseWriter, r *http.Request) {
					completeCRC, completeType = r.Header.Get("x-amz-checksum-crc32c"), r.Header.Get("x-amz-checksum-type")
					fmt.Fprintf(w, `<CompleteMultipartUploadResult><ETag>"e-2"</ETag><ChecksumCRC32C>%s</ChecksumCRC32C></CompleteMultipartUploadResult>`, tt.completeEcho)
				},
			})
			u := srv.uploader(t, Options{MaxAttempts: 1, PartSize: MinPartSize, MultipartThreshold: MinPartSize})
			_, err := u.Put(context.Background(), Object{Key: "k"}, body)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Put: %v; want error containing %q", err, tt.wantErr)
			}
			if createAlgo != "CRC32C" || createType != "FULL_OBJECT" {
				t.Fatalf("create sent algorithm %q type %q, want CRC32C FULL_OBJECT", createAlgo, createType)
			}
			want := []string{encodeCRC(crc32c(body[:MinPartSize])), encodeCRC(crc32c(body[MinPartSize:]))}
			if fmt.Sprint(partHeaders) != fmt.Sprint(want) {
				t.Fatalf("parts sent checksums %v, want %v", partHeaders, want)
			}
			if completeCRC != whole || completeType != "FULL_OBJECT" {
				t.Fatalf("complete sent %q %q, want the whole body's %q FULL_OBJECT", completeCRC, completeType, whole)
			}
		})
	}
}

// Payloads are signed (SHA-256 of the body) over plain HTTP and not over
// HTTPS, where TLS guards the body and the CRC32C proves it.
func TestPayloadSignedOnlyOverPlainHTTP(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // the test server's client brings its own CA
	var seen []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("X-Amz-Content-Sha256"))
		w.Header().Set("ETag", `"x"`)
		w.Header().Set("x-amz-checksum-crc32c", r.Header.Get("x-amz-checksum-crc32c"))
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(handler)
	defer tlsSrv.Close()
	body := []byte("records")
	for _, tc := range []struct {
		endpoint string
		client   *http.Client
		want     string
	}{
		{plain.URL, nil, fmt.Sprintf("%x", sha256.Sum256(body))},
		{tlsSrv.URL, tlsSrv.Client(), "UNSIGNED-PAYLOAD"},
	} {
		c, err := NewClient(context.Background(), ClientOptions{Region: "us-east-1", Endpoint: tc.endpoint,
			AccessKeyID: "test", SecretAccessKey: "testtesttest", HTTPClient: tc.client})
		if err != nil {
			t.Fatal(err)
		}
		seen = nil
		if _, err := New(c, Options{Bucket: "b", MaxAttempts: 1}).Put(context.Background(), Object{Key: "k"}, body); err != nil {
			t.Fatalf("%s: %v", tc.endpoint, err)
		}
		if len(seen) != 1 || seen[0] != tc.want {
			t.Fatalf("%s: X-Amz-Content-Sha256 = %v, want %q", tc.endpoint, seen, tc.want)
		}
	}
}

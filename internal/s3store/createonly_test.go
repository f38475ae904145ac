package s3store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// realStores are the out-of-process stores the create-only tests run on.
var realStores = []struct {
	name  string
	start func(t testing.TB) *testenv.S3
}{
	{"versitygw", testenv.StartVersity},
	{"minio", testenv.StartMinIO},
}

// startOn starts a store with the test bucket and returns it with the
// production client's Uploader over it.
func startOn(t *testing.T, start func(testing.TB) *testenv.S3, o Options) (*store, *Uploader) {
	t.Helper()
	srv := start(t)
	srv.CreateBucket(t, bucket)
	st := &store{srv: srv, direct: srv.Client(t)}
	o.Bucket = bucket
	return st, New(st.client(t, srv.Endpoint, 0), o)
}

// streamBody is a Stream write function sending body in 64 KiB writes.
func streamBody(body []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		for off := 0; off < len(body); off += 64 << 10 {
			if _, err := w.Write(body[off:min(off+64<<10, len(body))]); err != nil {
				return err
			}
		}
		return nil
	}
}

// The same key written twice with the same bytes: the second upload is told
// the object existed (nothing overwritten). Written again with other bytes:
// ErrConflict, and the first bytes are still there. For every write path:
// Put, Put as multipart, Stream as one PUT, Stream as multipart.
func TestCreateOnlyWrites(t *testing.T) {
	big := 2*MinPartSize + 4321 // three parts of MinPartSize
	paths := []writePath{
		{"put", 3000, false, func(u *Uploader, key string, body []byte) (Result, error) {
			return u.Put(context.Background(), Object{Key: key}, body)
		}},
		{"put multipart", big, true, func(u *Uploader, key string, body []byte) (Result, error) {
			return u.Put(context.Background(), Object{Key: key}, body)
		}},
		{"stream single put", 3000, false, func(u *Uploader, key string, body []byte) (Result, error) {
			return u.Stream(context.Background(), Object{Key: key}, streamBody(body))
		}},
		{"stream multipart", big, true, func(u *Uploader, key string, body []byte) (Result, error) {
			return u.Stream(context.Background(), Object{Key: key}, streamBody(body))
		}},
	}
	for _, store := range realStores {
		t.Run(store.name, func(t *testing.T) {
			st, u := startOn(t, store.start, Options{PartSize: MinPartSize, MultipartThreshold: MinPartSize})
			for i, p := range paths {
				t.Run(p.name, func(t *testing.T) { p.checkCreateOnly(t, st, u, randomBytes(uint64(10+i), p.size)) })
			}
		})
	}
}

// writePath is a way to write an object: Put or Stream, as one PutObject
// or as a multipart upload.
type writePath struct {
	name      string
	size      int
	multipart bool
	write     func(u *Uploader, key string, body []byte) (Result, error)
}

// checkCreateOnly writes body (of p.size bytes) to a key of its own twice,
// then other bytes of the same size and of another size, as
// TestCreateOnlyWrites says.
func (p writePath) checkCreateOnly(t *testing.T, st *store, u *Uploader, body []byte) {
	key := "create-only/" + p.name
	res, err := p.write(u, key, body)
	if err != nil || res.Existed || res.Multipart != p.multipart {
		t.Fatalf("first write: %+v, %v", res, err)
	}
	res, err = p.write(u, key, body)
	if err != nil || !res.Existed || res.Multipart != p.multipart || res.Bytes != int64(p.size) {
		t.Fatalf("same bytes again: %+v, %v; want success with Existed", res, err)
	}

	// Same size, one byte changed in the last part.
	other := bytes.Clone(body)
	other[len(other)-1] ^= 0xff
	_, err = p.write(u, key, other)
	var ce *ConflictError
	if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) {
		t.Fatalf("other bytes, same size: error %v, want ErrConflict", err)
	}
	if ce.Key != key || ce.ExistingSize != int64(p.size) || ce.SentSize != int64(p.size) ||
		ce.DiffTo != int64(p.size) || ce.DiffFrom >= ce.DiffTo {
		t.Fatalf("conflict %+v: want key %s, sizes %d, difference in the last part", ce, key, p.size)
	}
	// Another size.
	_, err = p.write(u, key, body[:len(body)-1])
	if !errors.As(err, &ce) || ce.ExistingSize != int64(p.size) || ce.SentSize != int64(p.size-1) {
		t.Fatalf("other size: error %v, want a conflict naming sizes %d and %d", err, p.size, p.size-1)
	}
	if got := st.get(t, key); sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatal("the first object's bytes changed")
	}
	if n := st.openUploads(t); n != 0 {
		t.Fatalf("%d multipart uploads left open", n)
	}
}

// The key was written by someone else first (another run, a stale writer):
// a plain PUT from outside, then the uploader's multipart upload of the same
// bytes is Existed, and of other bytes a conflict.
func TestCreateOnlyMeetsForeignObject(t *testing.T) {
	for _, store := range realStores {
		t.Run(store.name, func(t *testing.T) {
			st, u := startOn(t, store.start, Options{PartSize: MinPartSize})
			body := randomBytes(99, MinPartSize+10)
			_, err := st.direct.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
				Key: aws.String("foreign"), Body: bytes.NewReader(body)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := u.Stream(context.Background(), Object{Key: "foreign"}, streamBody(body))
			if err != nil || !res.Existed || res.Parts != 2 {
				t.Fatalf("same bytes: %+v, %v", res, err)
			}
			other := randomBytes(100, MinPartSize+10)
			_, err = u.Stream(context.Background(), Object{Key: "foreign"}, streamBody(other))
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.DiffFrom != 0 || ce.DiffTo != MinPartSize {
				t.Fatalf("other bytes: %v, want a conflict in the first part", err)
			}
			if got := st.get(t, "foreign"); !bytes.Equal(got, body) {
				t.Fatal("the foreign object changed")
			}
			if n := st.openUploads(t); n != 0 {
				t.Fatalf("%d multipart uploads left open after the refused completions", n)
			}
		})
	}
}

func TestHead(t *testing.T) {
	for _, store := range realStores {
		t.Run(store.name, func(t *testing.T) {
			_, u := startOn(t, store.start, Options{})
			ctx := context.Background()
			if _, err := u.Put(ctx, Object{Key: "head/there"}, make([]byte, 1234)); err != nil {
				t.Fatal(err)
			}
			size, found, err := u.Head(ctx, "head/there")
			if err != nil || !found || size != 1234 {
				t.Fatalf("Head of an object: size %d found %v err %v", size, found, err)
			}
			size, found, err = u.Head(ctx, "head/missing")
			if err != nil || found || size != 0 {
				t.Fatalf("Head of a missing key: size %d found %v err %v", size, found, err)
			}
		})
	}
}

package s3store

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// lostPut stores the first PutObject but reports a timeout, as when the
// reply is lost on the way back.
type lostPut struct {
	*fakeS3
	n int
}

func (l *lostPut) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	out, err := l.fakeS3.PutObject(ctx, in, o...)
	l.n++
	if l.n == 1 && err == nil {
		return nil, sendErr(timeoutErr{})
	}
	return out, err
}

// A PutObject whose reply was lost: the retry meets the object (412), finds
// the same bytes, and reports success with Existed.
func TestPutReplyLostIsExisted(t *testing.T) {
	f := newFake()
	u := New(&lostPut{fakeS3: f}, Options{Bucket: "b", Sleep: noSleep})
	body := []byte("records 0..99")
	res, err := u.Put(context.Background(), Object{Key: "k"}, body)
	if err != nil || !res.Existed || res.Retries != 1 || res.Attempts != 4 {
		t.Fatalf("Put = %+v, %v; want Existed after one retry (2 PUT + HEAD + GET)", res, err)
	}
	if got := strings.Join(f.calls, ","); got != "PutObject,PutObject,HeadObject,GetObject" {
		t.Fatalf("calls %s", got)
	}
}

// Completion refused because the key exists: our parts are aborted, then the
// object is compared with them.
func TestCompleteRefusedAbortsThenCompares(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), MinPartSize/5) // two parts
	tests := []struct {
		name     string
		existing []byte
		existed  bool
		conflict bool
	}{
		{"same bytes", body, true, false},
		{"other bytes, same size", append(bytes.Clone(body[:len(body)-1]), '!'), false, true},
		{"other size", body[:100], false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.objects["k"] = tt.existing
			u := New(f, Options{Bucket: "b", PartSize: MinPartSize, MultipartThreshold: MinPartSize})
			res, err := u.Put(context.Background(), Object{Key: "k"}, body)
			if res.Existed != tt.existed || errors.Is(err, ErrConflict) != tt.conflict || (err == nil) != tt.existed {
				t.Fatalf("Put = %+v, %v", res, err)
			}
			if f.count("AbortMultipartUpload") != 1 || f.openUploads() != 0 {
				t.Fatalf("refused upload not aborted: calls %v", f.calls)
			}
			if !bytes.Equal(f.objects["k"], tt.existing) {
				t.Fatal("the existing object changed")
			}
			var ce *ConflictError
			if tt.conflict && (!errors.As(err, &ce) || ce.SentSize != int64(len(body)) || ce.ExistingSize != int64(len(tt.existing))) {
				t.Fatalf("conflict %+v, want sizes %d sent, %d existing", ce, len(body), len(tt.existing))
			}
			if tt.conflict && !strings.Contains(err.Error(), "s3://b/k") {
				t.Fatalf("conflict %q does not name the object", err)
			}
		})
	}
}

// When the comparison cannot read the object, the upload fails with that
// error, not with a conflict: the drain must not take a read failure for
// other bytes.
func TestComparisonReadFailureIsNotConflict(t *testing.T) {
	tests := []struct {
		name   string
		failOp string
		want   string
	}{
		{"head fails", "HeadObject", "HeadObject"},
		{"get fails", "GetObject", "GetObject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.objects["k"] = []byte("abc")
			f.fail = func(op string, n int) error {
				if op == tt.failOp {
					return statusErr(503, "SlowDown")
				}
				return nil
			}
			u := New(f, Options{Bucket: "b", MaxAttempts: 2, Sleep: noSleep})
			_, err := u.Put(context.Background(), Object{Key: "k"}, []byte("abc"))
			var e *Error
			if err == nil || errors.Is(err, ErrConflict) || !errors.As(err, &e) || e.Op != tt.want || e.Attempts != 2 {
				t.Fatalf("Put error = %v, want %s failing after 2 attempts", err, tt.want)
			}
			if !strings.Contains(err.Error(), "comparing it with the bytes sent") {
				t.Fatalf("error %q does not say what was being done", err)
			}
		})
	}
}

// A 412 for a key HeadObject cannot find (deleted in between, or a confused
// store) is an error, neither success nor a conflict.
func TestRefusedButMissing(t *testing.T) {
	f := newFake()
	u := New(&refuseAll{fakeS3: f}, Options{Bucket: "b"})
	_, err := u.Put(context.Background(), Object{Key: "k"}, []byte("abc"))
	if err == nil || errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "no such object") {
		t.Fatalf("Put error = %v", err)
	}
}

type refuseAll struct{ *fakeS3 }

func (r *refuseAll) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return nil, statusErr(412, "PreconditionFailed")
}

func TestConflictErrorIs(t *testing.T) {
	var err error = &ConflictError{Bucket: "b", Key: "k", ExistingSize: 3, SentSize: 4}
	wrapped := errors.Join(errors.New("drain: partition 0"), err)
	if !errors.Is(wrapped, ErrConflict) {
		t.Fatal("errors.Is(ConflictError, ErrConflict) is false")
	}
	var ce *ConflictError
	if !errors.As(wrapped, &ce) || ce.Key != "k" {
		t.Fatal("errors.As does not find the ConflictError")
	}
	if errors.Is(errors.New("other"), ErrConflict) {
		t.Fatal("an unrelated error is a conflict")
	}
	for _, want := range []string{"s3://b/k", "3 bytes", "sent 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

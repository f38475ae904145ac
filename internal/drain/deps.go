package drain

import (
	"context"
	"io"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Conn is the part of an Iggy connection a run uses (*source.Conn).
type Conn interface {
	Topic(ctx context.Context, stream, topic, group string) (*source.Topic, error)
	Refresh(ctx context.Context, t *source.Topic) error
	Join(ctx context.Context, t *source.Topic) error
	Leave(ctx context.Context, t *source.Topic) error
	Poll(ctx context.Context, t *source.Topic, p uint32, offset uint64, count uint32, dst []batch.Message) ([]batch.Message, bool, error)
	// PollInto is Poll into memory the caller lends (see source.Conn.PollInto).
	PollInto(ctx context.Context, t *source.Topic, p uint32, offset uint64, count uint32, dst []batch.Message, buf *[]byte) ([]batch.Message, bool, error)
	Owns(ctx context.Context, t *source.Topic, p uint32) (bool, error)
	StoredOffset(ctx context.Context, t *source.Topic, p uint32) (uint64, bool, error)
	StoreOffset(ctx context.Context, t *source.Topic, p uint32, offset uint64) error
	Close() error
}

// StateStore keeps each partition's lease, unfinished intent, position and
// incarnation (state.Memory, state.Dynamo).
type StateStore interface {
	Acquire(ctx context.Context, key state.Key, owner string, ttl time.Duration) (state.State, error)
	SetIntent(ctx context.Context, s state.State, in state.Intent, ttl time.Duration) (state.State, error)
	Complete(ctx context.Context, s state.State, d state.Done, ttl time.Duration) (state.State, error)
	Abandon(ctx context.Context, s state.State, ttl time.Duration) (state.State, error)
	Skip(ctx context.Context, s state.State, lastWritten uint64, gapMessages uint64, ttl time.Duration) (state.State, error)
	Adopt(ctx context.Context, s state.State, incarnation uint64, ttl time.Duration) (state.State, error)
	Reset(ctx context.Context, s state.State, incarnation uint64, generation uint32, ttl time.Duration) (state.State, error)
	CarryOver(ctx context.Context, s state.State, from state.Carried, ttl time.Duration) (state.State, error)
	Renew(ctx context.Context, s state.State, ttl time.Duration) (state.State, error)
	Release(ctx context.Context, s state.State) error
	// Get reads a partition's state without taking it; false when it has none.
	Get(ctx context.Context, key state.Key) (state.State, bool, error)
}

// ObjectStore writes objects create-only and lists them (*s3store.Uploader).
// A write that meets an existing key returns Result.Existed when the key
// holds the same bytes, and an error wrapping s3store.ErrConflict when not.
type ObjectStore interface {
	Put(ctx context.Context, obj s3store.Object, body []byte) (s3store.Result, error)
	Stream(ctx context.Context, obj s3store.Object, write func(w io.Writer) error) (s3store.Result, error)
	List(ctx context.Context, prefix string, fn func(key string, size int64) error) error
	// ListAfter is List from the first key after startAfter.
	ListAfter(ctx context.Context, prefix, startAfter string, fn func(key string, size int64) error) error
	// Get returns the whole object at key.
	Get(ctx context.Context, key string) ([]byte, error)
	// Head reports whether key exists, and its size.
	Head(ctx context.Context, key string) (size int64, found bool, err error)
	// AbortUploads aborts the multipart uploads still open for key.
	AbortUploads(ctx context.Context, key string) (int, error)
	// Delete removes the object at key; a missing one is no error. The
	// sink deletes nothing but an error object orphaned by a voided key
	// (see committer.fenceErrors).
	Delete(ctx context.Context, key string) error
}

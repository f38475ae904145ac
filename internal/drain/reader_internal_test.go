package drain

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// pollsOf is a Conn whose partition holds n small JSON messages; the
// reader only polls.
type pollsOf struct {
	Conn
	n uint64
}

func (c pollsOf) PollInto(_ context.Context, _ *source.Topic, _ uint32, offset uint64, count uint32, dst []batch.Message, _ *[]byte) ([]batch.Message, bool, error) {
	for o := offset; o < c.n && uint32(len(dst)) < count; o++ {
		dst = append(dst, batch.Message{Offset: o, Timestamp: uint64(time.Now().UnixMicro()), Payload: []byte(`{"n":1}`)})
	}
	return dst, true, nil
}

// A reader that ends with records it did not seal (an object not full
// yet, left in Iggy for a later run) gives their accumulator back: when it
// is the run's read-ahead slot, the partitions drained after it may read
// ahead again.
func TestReaderGivesTheReadAheadSlotBack(t *testing.T) {
	r := &Runner{Options: Options{Records: batch.Options{Format: batch.FormatJSONLines}, Rotation: batch.Rotation{MaxMessages: 20, MaxAge: time.Hour}, KeepLimit: 1 << 20, MaxPollBytes: 1 << 20},
		Logger: slog.New(slog.DiscardHandler)}
	p := &partition{r: r, conn: pollsOf{n: 25}, topic: &source.Topic{}, stream: Stream{Schema: batch.SchemaJSON, BatchLength: 100}, bp: batch.Partition{Stream: "s", Topic: "t"}, log: r.Logger}
	readAhead := make(chan struct{}, 1)
	rd, err := newReader(p, readAhead)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan *sealed)
	sealedObjects := make(chan *sealed, 1)
	go func() {
		for s := range out {
			sealedObjects <- s // held, as by an upload in flight: its accumulator stays taken
		}
		close(sealedObjects)
	}()
	res := rd.run(context.Background(), 0, out)
	if res.err != nil || res.pending != 5 {
		t.Fatalf("reader ended with %v and %d records pending, want 5 pending", res.err, res.pending)
	}
	if s := <-sealedObjects; s == nil || s.first != 0 || s.last != 19 {
		t.Fatalf("sealed %+v, want offsets 0-19", s)
	}
	select {
	case readAhead <- struct{}{}:
	default:
		t.Fatal("the read-ahead slot is still taken after the reader ended")
	}
}

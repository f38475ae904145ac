package drain

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// The count a poll asks for follows the largest message of the last reply,
// within 1..batch_length; a reply too large to keep shrinks it at once, to
// one message at the least.
func TestPollSizer(t *testing.T) {
	msgs := func(sizes ...int) []batch.Message {
		out := make([]batch.Message, len(sizes))
		for i, n := range sizes {
			out[i].Payload = make([]byte, n)
		}
		return out
	}
	s := newPollSizer(16<<20, 1000)
	if s.count != 16 {
		t.Fatalf("first poll asks for %d, want 16 (messages of up to 1 MiB assumed)", s.count)
	}
	steps := []struct {
		name  string
		reply []batch.Message
		want  uint32
	}{
		{"small messages: batch_length", msgs(1000, 200, 1024), 1000},
		{"an empty reply changes nothing", nil, 1000},
		{"1 MiB messages", msgs(1<<20, 10), 15},
		{"one 20 MiB message: one at a time", msgs(20 << 20), 1},
		{"back to small", msgs(100), 1000},
	}
	for _, st := range steps {
		s.observe(st.reply)
		if s.count != st.want {
			t.Fatalf("%s: count %d, want %d", st.name, s.count, st.want)
		}
	}
	if !s.shrink(&source.PollTooLargeError{Size: 100 << 20, Limit: 16<<20 + 64<<10}) || s.count != 80 {
		t.Fatalf("a 100 MiB reply of 1000 messages: count %d, want 80", s.count)
	}
	for s.count > 1 {
		before := s.count
		if !s.shrink(&source.PollTooLargeError{Size: 17 << 20, Limit: 16<<20 + 64<<10}) || s.count >= before {
			t.Fatalf("shrink from %d to %d", before, s.count)
		}
	}
	if s.shrink(&source.PollTooLargeError{Size: 17 << 20, Limit: 16 << 20}) {
		t.Fatal("a reply of one message too large shrank the count below one")
	}
	if !s.tooLarge(&batch.Message{Payload: make([]byte, 16<<20), Headers: []byte{1}}) || s.tooLarge(&batch.Message{Payload: make([]byte, 16<<20)}) {
		t.Fatal("tooLarge does not count payload and headers against max_poll_bytes")
	}
}

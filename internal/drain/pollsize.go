package drain

import (
	"errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// messageOverhead is what a message costs in a poll reply beyond its
// payload and user headers: its frame header, and a batch header when it
// came alone (counted for every message, to stay on the safe side).
const messageOverhead = 48 + 256

// firstPollBytes is the size the first poll of a partition assumes each
// message has, before any is seen.
const firstPollBytes = 1 << 20

// pollSizer picks how many messages a poll asks for, so that a reply
// stays within maxBytes: as many as the largest message of the last reply
// allows, at most batchLength, at least one (issue 21, item 12). A reply
// the server refuses to keep (too large) shrinks the count at once.
type pollSizer struct {
	maxBytes int64
	limit    uint32 // batch_length
	count    uint32
}

func newPollSizer(maxBytes int64, batchLength uint32) pollSizer {
	s := pollSizer{maxBytes: maxBytes, limit: batchLength}
	s.fit(firstPollBytes)
	return s
}

// fit sets the count for messages of about size bytes each (with overhead).
func (s *pollSizer) fit(size int64) {
	n := s.maxBytes / max(size, 1)
	s.count = uint32(min(max(n, 1), int64(s.limit)))
}

// observe adapts the count to the largest message of a reply, and returns
// the reply's payload and header bytes.
func (s *pollSizer) observe(msgs []batch.Message) uint64 {
	if len(msgs) == 0 {
		return 0
	}
	largest, total := 0, uint64(0)
	for i := range msgs {
		n := len(msgs[i].Payload) + len(msgs[i].Headers)
		largest, total = max(largest, n), total+uint64(n)
	}
	s.fit(int64(largest) + messageOverhead)
	return total
}

// shrink answers a reply too large to keep: false when the count was one
// already (then a single message is too large).
func (s *pollSizer) shrink(e *source.PollTooLargeError) bool {
	if s.count <= 1 {
		return false
	}
	n := uint64(s.count) * uint64(e.Limit) / max(uint64(e.Size), 1) / 2
	s.count = uint32(min(max(n, 1), uint64(s.count)-1))
	return true
}

// tooLarge reports whether m is larger than a poll may take in.
func (s *pollSizer) tooLarge(m *batch.Message) bool {
	return int64(len(m.Payload)+len(m.Headers)) > s.maxBytes
}

// asTooLarge is the poll error of a reply too large to keep, or nil.
func asTooLarge(err error) *source.PollTooLargeError {
	var e *source.PollTooLargeError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

package source

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggyref"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// ErrNotFound reports a stream or topic the sink was configured to read
// that the server does not have. The sink never creates streams or topics.
var ErrNotFound = errors.New("not found")

// PartitionInfo is what the server reports about one partition.
type PartitionInfo struct {
	ID            uint32
	MessagesCount uint64
	// CurrentOffset is the highest offset written (0 when empty).
	CurrentOffset uint64
	// CreatedAt is the partition's creation time in microseconds: it
	// identifies an incarnation (a partition deleted and re-created under
	// the same name gets a new one).
	CreatedAt uint64
	// Incarnation is Iggy 0.10's own incarnation number of the partition
	// (0 on 0.8 and 0.9): it changes exactly when the partition is
	// re-created.
	Incarnation uint64
}

// IdentityBase offsets an Identity that is Iggy 0.10's incarnation number
// rather than a creation time: creation times in microseconds stay below
// 2^52 until the year 2112, and the sum stays below 2^53, which every
// DynamoDB client and emulator carries exactly.
const IdentityBase = 1 << 52

// Identity is what a state records as the partition's incarnation: the
// server's own incarnation number when it reports one (0.10) that fits,
// offset by IdentityBase, else the creation time. A partition deleted and
// re-created under the same name gets another.
func (p PartitionInfo) Identity() uint64 {
	if p.Incarnation != 0 && p.Incarnation < IdentityBase {
		return IdentityBase + p.Incarnation
	}
	return p.CreatedAt
}

// Topic is a resolved stream/topic and its consumer group.
type Topic struct {
	// Stream and Topic are the names the server reports, whether the
	// configuration named them or gave their ids: records and keys carry
	// these. StreamRef and TopicRef are the values as configured.
	Stream, Topic, Group string
	StreamID, TopicID    uint32
	StreamRef, TopicRef  string
	Partitions           []PartitionInfo
}

// streamInfo is a resolved stream.
type streamInfo struct {
	id   uint32
	name string
}

// Topic resolves a configured stream and topic — a name, a numeric id, or
// "name:<text>" (see iggyref) — to the ids and names the server has, once
// per connection, and returns its partitions. Later calls on the topic use
// its ids, so a topic deleted and re-created under the same name during a
// run is not silently mixed with the old one.
func (c *Conn) Topic(ctx context.Context, stream, topic, group string) (*Topic, error) {
	key := [3]string{stream, topic, group}
	c.mu.Lock()
	t, ok := c.topics[key]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	if err := vsr.CheckName("iggy consumer group", group); err != nil {
		return nil, err
	}
	st, err := c.stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	tr := iggyref.Parse(topic)
	if err := checkRef(tr); err != nil {
		return nil, fmt.Errorf("iggy topic %s: %w", describe(topic), err)
	}
	info, found, err := c.b.topic(ctx, st.id, tr)
	switch {
	case err != nil:
		return nil, fmt.Errorf("iggy get topic %s/%s: %w", st.name, describe(topic), err)
	case !found:
		return nil, fmt.Errorf("iggy topic %s in stream %q: %w on %s", describe(topic), st.name, ErrNotFound, c.cfg.Address)
	}
	t = &Topic{
		Stream: st.name, Topic: info.name, Group: group, StreamID: st.id, TopicID: info.id, StreamRef: stream, TopicRef: topic,
		Partitions: info.partitions,
	}
	c.mu.Lock()
	if c.topics == nil {
		c.topics = map[[3]string]*Topic{}
	}
	c.topics[key] = t
	c.mu.Unlock()
	return t, nil
}

// stream resolves a configured stream once per connection.
func (c *Conn) stream(ctx context.Context, stream string) (streamInfo, error) {
	c.mu.Lock()
	st, ok := c.streams[stream]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	ref := iggyref.Parse(stream)
	if err := checkRef(ref); err != nil {
		return st, fmt.Errorf("iggy stream %s: %w", describe(stream), err)
	}
	st, found, err := c.b.stream(ctx, ref)
	switch {
	case err != nil:
		return st, fmt.Errorf("iggy get stream %s: %w", describe(stream), err)
	case !found:
		return st, fmt.Errorf("iggy stream %s: %w on %s", describe(stream), ErrNotFound, c.cfg.Address)
	}
	c.mu.Lock()
	if c.streams == nil {
		c.streams = map[string]streamInfo{}
	}
	c.streams[stream] = st
	c.mu.Unlock()
	return st, nil
}

// checkRef refuses a name no identifier can carry.
func checkRef(r iggyref.Ref) error {
	if r.ByID {
		return nil
	}
	return vsr.CheckName("name", r.Name)
}

// DuplicateError reports two configured values that resolve to one topic.
type DuplicateError struct{ First, Second *Topic }

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("stream %s topic %s and stream %s topic %s are the same topic, %q (id %d) of stream %q (id %d): list each topic once",
		describe(e.First.StreamRef), describe(e.First.TopicRef), describe(e.Second.StreamRef), describe(e.Second.TopicRef),
		e.First.Topic, e.First.TopicID, e.First.Stream, e.First.StreamID)
}

// CheckDistinct refuses two resolved topics that are the same topic (e.g.
// configured once by name and once by id): it would be archived twice.
func CheckDistinct(ts []*Topic) error {
	seen := make(map[[2]uint32]*Topic, len(ts))
	for _, t := range ts {
		k := [2]uint32{t.StreamID, t.TopicID}
		if first, dup := seen[k]; dup && first != t {
			return &DuplicateError{First: first, Second: t}
		}
		seen[k] = t
	}
	return nil
}

// Refresh re-reads the partitions' offsets.
func (c *Conn) Refresh(ctx context.Context, t *Topic) error {
	info, found, err := c.b.topic(ctx, t.StreamID, iggyref.Ref{ID: t.TopicID, ByID: true})
	if err == nil && !found {
		err = fmt.Errorf("%w (deleted since the run resolved it)", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("iggy get topic %s/%s: %w", t.Stream, t.Topic, err)
	}
	t.Partitions = append(t.Partitions[:0], info.partitions...)
	return nil
}

// Join creates the consumer group if it is missing and joins it.
func (c *Conn) Join(ctx context.Context, t *Topic) error {
	if err := c.b.join(ctx, t); err != nil {
		return fmt.Errorf("iggy join consumer group %q on %s/%s: %w", t.Group, t.Stream, t.Topic, err)
	}
	return nil
}

// Leave leaves the consumer group; not being a member is not an error.
func (c *Conn) Leave(ctx context.Context, t *Topic) error {
	if err := c.b.leave(ctx, t); err != nil {
		return fmt.Errorf("iggy leave consumer group %q on %s/%s: %w", t.Group, t.Stream, t.Topic, err)
	}
	return nil
}

// describe renders a configured reference for messages: "orders", or id 7.
func describe(s string) string {
	if r := iggyref.Parse(s); r.ByID {
		return fmt.Sprintf("id %d", r.ID)
	}
	return strconv.Quote(iggyref.Parse(s).Name)
}

package source

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggyref"
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

	streamID, topicID, groupID iggcon.Identifier
	consumer                   iggcon.Consumer
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
	gid, err := iggcon.NewIdentifier(group)
	if err != nil {
		return nil, fmt.Errorf("iggy consumer group %q: %w", group, err)
	}
	st, err := c.stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	tr := iggyref.Parse(topic)
	tid, err := refIdentifier(tr)
	if err != nil {
		return nil, fmt.Errorf("iggy topic %s: %w", describe(topic), err)
	}
	sid, _ := iggcon.NewIdentifier(st.id)
	var details *iggcon.TopicDetails
	err = c.do(ctx, "get topic", func() error {
		var err error
		details, err = c.cli.GetTopic(sid, tid)
		return err
	})
	switch {
	case errors.Is(err, ierror.ErrTopicIdNotFound) || errors.Is(err, ierror.ErrStreamIdNotFound):
		return nil, fmt.Errorf("iggy topic %s in stream %q: %w on %s", describe(topic), st.name, ErrNotFound, c.cfg.Address)
	case err != nil:
		return nil, fmt.Errorf("iggy get topic %s/%s: %w", st.name, describe(topic), err)
	}
	tidNum, _ := iggcon.NewIdentifier(details.Id)
	t = &Topic{
		Stream: st.name, Topic: details.Name, Group: group, StreamID: st.id, TopicID: details.Id, StreamRef: stream, TopicRef: topic,
		streamID: sid, topicID: tidNum, groupID: gid, consumer: iggcon.NewGroupConsumer(gid),
	}
	for _, p := range details.Partitions {
		t.Partitions = append(t.Partitions, PartitionInfo{ID: p.Id, MessagesCount: p.MessagesCount, CurrentOffset: p.CurrentOffset, CreatedAt: p.CreatedAt})
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
	sid, err := refIdentifier(iggyref.Parse(stream))
	if err != nil {
		return st, fmt.Errorf("iggy stream %s: %w", describe(stream), err)
	}
	var details *iggcon.StreamDetails
	err = c.do(ctx, "get stream", func() error {
		var err error
		details, err = c.cli.GetStream(sid)
		return err
	})
	switch {
	case errors.Is(err, ierror.ErrStreamIdNotFound):
		return st, fmt.Errorf("iggy stream %s: %w on %s", describe(stream), ErrNotFound, c.cfg.Address)
	case err != nil:
		return st, fmt.Errorf("iggy get stream %s: %w", describe(stream), err)
	}
	st = streamInfo{id: details.Id, name: details.Name}
	c.mu.Lock()
	if c.streams == nil {
		c.streams = map[string]streamInfo{}
	}
	c.streams[stream] = st
	c.mu.Unlock()
	return st, nil
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
	var details *iggcon.TopicDetails
	err := c.do(ctx, "get topic", func() error {
		var err error
		details, err = c.cli.GetTopic(t.streamID, t.topicID)
		return err
	})
	if err != nil {
		return fmt.Errorf("iggy get topic %s/%s: %w", t.Stream, t.Topic, err)
	}
	t.Partitions = t.Partitions[:0]
	for _, p := range details.Partitions {
		t.Partitions = append(t.Partitions, PartitionInfo{ID: p.Id, MessagesCount: p.MessagesCount, CurrentOffset: p.CurrentOffset, CreatedAt: p.CreatedAt})
	}
	return nil
}

// Join creates the consumer group if it is missing and joins it.
func (c *Conn) Join(ctx context.Context, t *Topic) error {
	err := c.do(ctx, "create consumer group", func() error {
		_, err := c.cli.CreateConsumerGroup(t.streamID, t.topicID, t.Group)
		return err
	})
	if err != nil && !errors.Is(err, ierror.ErrConsumerGroupNameAlreadyExists) {
		return fmt.Errorf("iggy create consumer group %q on %s/%s: %w", t.Group, t.Stream, t.Topic, err)
	}
	if err := c.do(ctx, "join consumer group", func() error { return c.cli.JoinConsumerGroup(t.streamID, t.topicID, t.groupID) }); err != nil {
		return fmt.Errorf("iggy join consumer group %q on %s/%s: %w", t.Group, t.Stream, t.Topic, err)
	}
	return nil
}

// Leave leaves the consumer group; not being a member is not an error.
func (c *Conn) Leave(ctx context.Context, t *Topic) error {
	err := c.do(ctx, "leave consumer group", func() error { return c.cli.LeaveConsumerGroup(t.streamID, t.topicID, t.groupID) })
	if err != nil && !errors.Is(err, ierror.ErrConsumerGroupMemberNotFound) {
		return fmt.Errorf("iggy leave consumer group %q on %s/%s: %w", t.Group, t.Stream, t.Topic, err)
	}
	return nil
}

// refIdentifier turns a configured reference into an SDK identifier.
func refIdentifier(r iggyref.Ref) (iggcon.Identifier, error) {
	if r.ByID {
		return iggcon.NewIdentifier(r.ID)
	}
	return iggcon.NewIdentifier(r.Name)
}

// describe renders a configured reference for messages: "orders", or id 7.
func describe(s string) string {
	if r := iggyref.Parse(s); r.ByID {
		return fmt.Sprintf("id %d", r.ID)
	}
	return strconv.Quote(iggyref.Parse(s).Name)
}

package source

import (
	"context"
	"errors"
	"fmt"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"
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
	Stream, Topic, Group string
	Partitions           []PartitionInfo

	streamID, topicID, groupID iggcon.Identifier
	consumer                   iggcon.Consumer
}

// Topic resolves stream and topic by name (or numeric id) and returns their partitions.
func (c *Conn) Topic(ctx context.Context, stream, topic, group string) (*Topic, error) {
	sid, err := identifier(stream)
	if err != nil {
		return nil, fmt.Errorf("iggy stream %q: %w", stream, err)
	}
	tid, err := identifier(topic)
	if err != nil {
		return nil, fmt.Errorf("iggy topic %q: %w", topic, err)
	}
	gid, err := iggcon.NewIdentifier(group)
	if err != nil {
		return nil, fmt.Errorf("iggy consumer group %q: %w", group, err)
	}
	var details *iggcon.TopicDetails
	err = c.do(ctx, "get topic", func() error {
		var err error
		details, err = c.cli.GetTopic(sid, tid)
		return err
	})
	switch {
	case errors.Is(err, ierror.ErrStreamIdNotFound):
		return nil, fmt.Errorf("iggy stream %q: %w on %s", stream, ErrNotFound, c.cfg.Address)
	case errors.Is(err, ierror.ErrTopicIdNotFound):
		// GetTopic answers "not found" for a missing stream too; say which.
		if serr := c.do(ctx, "get stream", func() error { _, err := c.cli.GetStream(sid); return err }); errors.Is(serr, ierror.ErrStreamIdNotFound) {
			return nil, fmt.Errorf("iggy stream %q: %w on %s", stream, ErrNotFound, c.cfg.Address)
		}
		return nil, fmt.Errorf("iggy topic %q in stream %q: %w on %s", topic, stream, ErrNotFound, c.cfg.Address)
	case err != nil:
		return nil, fmt.Errorf("iggy get topic %s/%s: %w", stream, topic, err)
	}
	t := &Topic{Stream: stream, Topic: topic, Group: group, streamID: sid, topicID: tid, groupID: gid, consumer: iggcon.NewGroupConsumer(gid)}
	for _, p := range details.Partitions {
		t.Partitions = append(t.Partitions, PartitionInfo{ID: p.Id, MessagesCount: p.MessagesCount, CurrentOffset: p.CurrentOffset, CreatedAt: p.CreatedAt})
	}
	return t, nil
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

func identifier(s string) (iggcon.Identifier, error) {
	// Names are the norm; a purely numeric value is an id, as upstream accepts.
	if n, ok := numeric(s); ok {
		return iggcon.NewIdentifier(n)
	}
	return iggcon.NewIdentifier(s)
}

func numeric(s string) (uint32, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + uint64(s[i]-'0')
	}
	if n > 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

package source

import (
	"context"
	"errors"
	"fmt"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// ErrNotOwner reports that this member does not (or no longer) own the
// partition: Iggy refused an offset store (3022, surfaced by the SDK as a
// generic error), or the caller is not a member (5006).
var ErrNotOwner = errors.New("partition not owned by this consumer group member")

// Poll reads up to count messages of partition p starting at offset,
// without auto-commit. Messages are copied out of the SDK's reply buffer
// into one fresh arena, so they stay valid after the next call.
//
// A poll on a partition this member does not own answers an empty header
// (partition 0, offset 0, no messages), exactly like an empty partition 0;
// owned is false whenever the reply does not name partition p or carries
// nothing, so callers must not read "not owned" into an empty partition 0.
func (c *Conn) Poll(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32, dst []batch.Message) (msgs []batch.Message, owned bool, err error) {
	var polled *iggcon.PolledMessage
	part := p
	err = c.do(ctx, "poll messages", func() error {
		var err error
		polled, err = c.cli.PollMessages(t.streamID, t.topicID, t.consumer, iggcon.OffsetPollingStrategy(offset), count, false, &part)
		return err
	})
	if err != nil {
		if errors.Is(err, ierror.ErrConsumerGroupMemberNotFound) {
			return dst, false, fmt.Errorf("iggy poll %s/%s partition %d: %w: %w", t.Stream, t.Topic, p, ErrNotOwner, err)
		}
		return dst, false, fmt.Errorf("iggy poll %s/%s partition %d at offset %d: %w", t.Stream, t.Topic, p, offset, err)
	}
	if polled == nil || len(polled.Messages) == 0 {
		return dst, polled != nil && polled.PartitionId == p && (p != 0 || polled.CurrentOffset != 0), nil
	}
	if polled.PartitionId != p {
		return dst, false, nil
	}
	size := 0
	for i := range polled.Messages {
		size += len(polled.Messages[i].Payload) + len(polled.Messages[i].UserHeaders)
	}
	arena := make([]byte, 0, size)
	for i := range polled.Messages {
		m := &polled.Messages[i]
		start := len(arena)
		arena = append(arena, m.Payload...)
		payload := arena[start:len(arena):len(arena)]
		var headers []byte
		if len(m.UserHeaders) > 0 {
			start = len(arena)
			arena = append(arena, m.UserHeaders...)
			headers = arena[start:len(arena):len(arena)]
		}
		dst = append(dst, batch.Message{Offset: m.Header.Offset, Timestamp: m.Header.Timestamp, Headers: headers, Payload: payload})
	}
	return dst, true, nil
}

// StoredOffset returns the group's stored offset for partition p; ok is
// false when nothing is stored (the server answers an empty reply).
func (c *Conn) StoredOffset(ctx context.Context, t *Topic, p uint32) (offset uint64, ok bool, err error) {
	var info *iggcon.ConsumerOffsetInfo
	part := p
	err = c.do(ctx, "get consumer offset", func() error {
		var err error
		info, err = c.cli.GetConsumerOffset(t.consumer, t.streamID, t.topicID, &part)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("iggy get offset of group %q on %s/%s partition %d: %w", t.Group, t.Stream, t.Topic, p, err)
	}
	if info == nil {
		return 0, false, nil
	}
	return info.StoredOffset, true, nil
}

// StoreOffset stores offset (inclusive: the last message written) as the
// group's offset for partition p. ErrNotOwner when Iggy says the partition
// is not this member's (after a rebalance); the sink's state then carries
// the position and the next owner reconciles.
func (c *Conn) StoreOffset(ctx context.Context, t *Topic, p uint32, offset uint64) error {
	part := p
	err := c.do(ctx, "store consumer offset", func() error {
		return c.cli.StoreConsumerOffset(t.consumer, t.streamID, t.topicID, offset, &part)
	})
	if err == nil {
		return nil
	}
	var ie ierror.IggyError
	notOwner := errors.Is(err, ierror.ErrConsumerGroupMemberNotFound)
	if !notOwner && errors.As(err, &ie) && ie.Code() == ierror.ErrError.Code() {
		// SDK v0.8.0 turns NotResolvedConsumer (3022: the partition is not
		// this member's) into a generic error; a poll of the stored offset,
		// which exists, tells whether that is what happened.
		msgs, owned, perr := c.Poll(ctx, t, p, offset, 1, nil)
		notOwner = errors.Is(perr, ErrNotOwner) || perr == nil && (!owned || len(msgs) == 0)
	}
	if notOwner {
		return fmt.Errorf("iggy store offset %d of group %q on %s/%s partition %d: %w: %w", offset, t.Group, t.Stream, t.Topic, p, ErrNotOwner, err)
	}
	return fmt.Errorf("iggy store offset %d of group %q on %s/%s partition %d: %w", offset, t.Group, t.Stream, t.Topic, p, err)
}

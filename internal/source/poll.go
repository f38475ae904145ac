package source

import (
	"context"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// Poll reads up to count messages of partition p starting at offset,
// without auto-commit. The messages' bytes stay valid after the next call.
//
// owned is false when the reply does not show the partition as this
// member's (0.8 answers a poll of a partition another member owns exactly
// like an empty partition 0, so callers must not read "not owned" into an
// empty partition 0); an error wrapping ErrNotOwner says the server told
// so, or that the partition moved away (0.9/0.10).
func (c *Conn) Poll(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32, dst []batch.Message) (msgs []batch.Message, owned bool, err error) {
	return c.PollInto(ctx, t, p, offset, count, dst, nil)
}

// PollInto is Poll reading the reply into memory the caller lends (*buf,
// which it grows as needed): the messages' bytes then alias *buf and stay
// valid only until the next PollInto with the same buf. A reader that is
// done with each reply's messages before it polls again thus polls without
// allocating a reply's worth of bytes each time (0.9 and 0.10; the 0.8
// client allocates its own). buf nil: like Poll.
func (c *Conn) PollInto(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32, dst []batch.Message, buf *[]byte) (msgs []batch.Message, owned bool, err error) {
	msgs, owned, err = c.b.poll(ctx, t, p, offset, count, dst, buf)
	if err != nil {
		return msgs, false, fmt.Errorf("iggy poll %s/%s partition %d at offset %d: %w", t.Stream, t.Topic, p, offset, err)
	}
	return msgs, owned, nil
}

// Owns reports whether partition p is this member's now. On 0.9 and 0.10
// it is what Sync says (a poll would mark the partition as read up to
// there, which holds up its hand-over to a member that joins); on 0.8 a
// one-message poll of the newest message tells, since a poll of a
// partition another member owns answers nothing. An empty partition is
// nobody's to drain: false.
func (c *Conn) Owns(ctx context.Context, t *Topic, p uint32) (bool, error) {
	for _, pi := range t.Partitions {
		if pi.ID != p {
			continue
		}
		if pi.MessagesCount == 0 {
			return false, nil
		}
		owned, err := c.b.owns(ctx, t, p, pi.CurrentOffset)
		if err != nil {
			return false, fmt.Errorf("iggy: does this member own %s/%s partition %d: %w", t.Stream, t.Topic, p, err)
		}
		return owned, nil
	}
	return false, fmt.Errorf("iggy: %s/%s has no partition %d", t.Stream, t.Topic, p)
}

// StoredOffset returns the group's stored offset for partition p; ok is
// false when nothing is stored.
func (c *Conn) StoredOffset(ctx context.Context, t *Topic, p uint32) (offset uint64, ok bool, err error) {
	offset, ok, err = c.b.storedOffset(ctx, t, p)
	if err != nil {
		return 0, false, fmt.Errorf("iggy get offset of group %q on %s/%s partition %d: %w", t.Group, t.Stream, t.Topic, p, err)
	}
	return offset, ok, nil
}

// StoreOffset stores offset (inclusive: the last message written) as the
// group's offset for partition p. ErrNotOwner when Iggy says the partition
// is not this member's (after a rebalance); the sink's state then carries
// the position and the next owner reconciles.
func (c *Conn) StoreOffset(ctx context.Context, t *Topic, p uint32, offset uint64) error {
	if err := c.b.storeOffset(ctx, t, p, offset); err != nil {
		return fmt.Errorf("iggy store offset %d of group %q on %s/%s partition %d: %w", offset, t.Group, t.Stream, t.Topic, p, err)
	}
	return nil
}

// PartitionOffsets is where a consumer group stands on one partition.
type PartitionOffsets struct {
	Partition uint32
	Messages  uint64
	Current   *uint64 // the newest offset; nil when the partition is empty
	Committed *uint64 // the group's stored offset; nil when it stored none
}

// Lag is the messages the group has yet to read.
func (p PartitionOffsets) Lag() uint64 {
	switch {
	case p.Current == nil:
		return 0
	case p.Committed == nil:
		return *p.Current + 1
	case *p.Current > *p.Committed:
		return *p.Current - *p.Committed
	}
	return 0
}

// Offsets reads where t's group stands on each of t's partitions, joining
// nothing and writing nothing.
func (c *Conn) Offsets(ctx context.Context, t *Topic) ([]PartitionOffsets, error) {
	out := make([]PartitionOffsets, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		po := PartitionOffsets{Partition: p.ID, Messages: p.MessagesCount}
		if p.MessagesCount > 0 {
			cur := p.CurrentOffset
			po.Current = &cur
		}
		off, ok, err := c.StoredOffset(ctx, t, p.ID)
		if err != nil {
			return out, err
		}
		if ok {
			po.Committed = &off
		}
		out = append(out, po)
	}
	return out, nil
}

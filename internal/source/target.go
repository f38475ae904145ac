package source

import (
	"context"
	"errors"
	"fmt"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// readerName is the plain consumer Read polls as. It never stores an
// offset, so it leaves nothing on the server.
const readerName = "iggy-s3-sink-reader"

// Read reads up to count messages of partition p from offset as a plain
// consumer: no group membership, nothing stored, so it works on any
// partition and disturbs no group (a replay reads its target back with it).
// The messages' bytes are the caller's.
func (c *Conn) Read(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32) ([]batch.Message, error) {
	msgs, err := c.b.read(ctx, t, p, offset, count)
	if err != nil {
		return nil, fmt.Errorf("iggy read %s/%s partition %d at offset %d: %w", t.Stream, t.Topic, p, offset, err)
	}
	return msgs, nil
}

// ErrExists is a stream or topic CreateTopic found already there.
var ErrExists = errors.New("already exists")

// CreateTopic creates topic with partitions partitions (server defaults for
// everything else) in stream, creating the stream when it is missing. A
// topic already there is ErrExists, wrapped.
func (c *Conn) CreateTopic(ctx context.Context, stream, topic string, partitions uint32) error {
	if err := vsr.CheckName("stream name", stream); err != nil {
		return err
	}
	if err := vsr.CheckName("topic name", topic); err != nil {
		return err
	}
	if err := c.b.createTopic(ctx, stream, topic, partitions); err != nil {
		return fmt.Errorf("iggy create topic %s/%s with %d partitions: %w", stream, topic, partitions, err)
	}
	c.mu.Lock()
	delete(c.streams, stream) // resolved again, with its id
	c.mu.Unlock()
	return nil
}

func (b *vsrBackend) read(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32) ([]batch.Message, error) {
	req := vsr.Poll{Consumer: vsr.Consumer{Kind: vsr.ConsumerSingle, ID: vsr.NamedID(readerName)}, Stream: vsr.NumericID(t.StreamID),
		Topic: vsr.NumericID(t.TopicID), Partition: vsr.PartitionID(p), Strategy: vsr.AtOffset(offset), Count: count}
	pc := b.context(t, p)
	if pc != nil {
		pc.OwnerGeneration = 0 // a plain consumer binds to no group owner
	}
	rep, err := b.c.Poll(ctx, &req, pc)
	if err != nil {
		return nil, err
	}
	if rep.PartitionID != p && !rep.Resync() {
		return nil, fmt.Errorf("%w: a read of partition %d answered for partition %d", ErrMalformedReply, p, rep.PartitionID)
	}
	return appendMessages(nil, &rep)
}

func (b *vsrBackend) createTopic(ctx context.Context, stream, topic string, partitions uint32) error {
	_, err := b.c.CreateStream(ctx, stream)
	if err != nil && !vsr.IsStatus(err, vsr.StatusStreamNameExists) {
		return fmt.Errorf("create stream: %w", err)
	}
	_, err = b.c.CreateTopic(ctx, vsr.NamedID(stream), topic, partitions, nil)
	if vsr.IsStatus(err, vsr.StatusTopicNameExists) {
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	return err
}

func (l *legacy) read(ctx context.Context, t *Topic, p uint32, offset uint64, count uint32) ([]batch.Message, error) {
	var polled *iggcon.PolledMessage
	part := p
	err := l.do(ctx, "read messages", func() error {
		var err error
		polled, err = l.cli.PollMessages(sdkID(t.StreamID), sdkID(t.TopicID), iggcon.NewSingleConsumer(sdkID(readerName)),
			iggcon.OffsetPollingStrategy(offset), count, false, &part)
		return err
	})
	if err != nil || polled == nil {
		return nil, err
	}
	out := make([]batch.Message, 0, len(polled.Messages))
	for i := range polled.Messages {
		m := &polled.Messages[i]
		out = append(out, batch.Message{Offset: m.Header.Offset, Timestamp: m.Header.Timestamp, Headers: m.UserHeaders, Payload: m.Payload,
			ID: [16]byte(m.Header.Id), OriginTimestamp: m.Header.OriginTimestamp})
	}
	return out, nil
}

func (l *legacy) createTopic(ctx context.Context, stream, topic string, partitions uint32) error {
	err := l.do(ctx, "create stream", func() error {
		_, err := l.cli.CreateStream(stream)
		return err
	})
	if err != nil && !errors.Is(err, ierror.ErrStreamNameAlreadyExists) {
		return fmt.Errorf("create stream: %w", err)
	}
	err = l.do(ctx, "create topic", func() error {
		_, err := l.cli.CreateTopic(sdkID(stream), topic, partitions, iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
		return err
	})
	if errors.Is(err, ierror.ErrTopicNameAlreadyExists) {
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	return err
}

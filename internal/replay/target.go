package replay

import (
	"context"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// TopicTarget is a Target on a resolved topic of a connection. Next
// refreshes the topic, so a target deleted and created again under the
// same ids shows its new identity; a connection's calls are one at a
// time, so a TopicTarget serves one replayer.
type TopicTarget struct {
	Conn  *source.Conn
	Topic *source.Topic
}

func (tt *TopicTarget) Next(ctx context.Context, p uint32) (next, identity uint64, err error) {
	if err := tt.Conn.Refresh(ctx, tt.Topic); err != nil {
		return 0, 0, err
	}
	for _, pi := range tt.Topic.Partitions {
		if pi.ID == p {
			if pi.MessagesCount == 0 {
				return 0, pi.Identity(), nil
			}
			return pi.CurrentOffset + 1, pi.Identity(), nil
		}
	}
	return 0, 0, fmt.Errorf("replay: the target %s/%s has no partition %d", tt.Topic.Stream, tt.Topic.Topic, p)
}

func (tt *TopicTarget) Read(ctx context.Context, p uint32, offset uint64, count uint32) ([]batch.Message, error) {
	return tt.Conn.Read(ctx, tt.Topic, p, offset, count)
}

func (tt *TopicTarget) Send(ctx context.Context, p uint32, msgs []source.Outgoing) (uint64, bool, error) {
	return tt.Conn.Send(ctx, tt.Topic, p, msgs)
}

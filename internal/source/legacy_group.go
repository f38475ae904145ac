package source

import (
	"context"
	"errors"
	"fmt"
	"slices"

	ierror "github.com/apache/iggy/foreign/go/errors"
)

// Member is one member of a consumer group as the server lists it: a
// server-side member number (not the client id; a client cannot learn its
// own) and the partitions assigned to it, pending hand-overs included.
type Member struct {
	ID         uint32
	Partitions []uint32
}

// GroupMembers lists the members of t's consumer group, sorted by id. A
// group that does not exist (yet) has none: nil, no error. It needs no
// membership, so it observes a group without changing it.
func (c *Conn) GroupMembers(ctx context.Context, t *Topic) ([]Member, error) {
	var out []Member
	err := c.do(ctx, "get consumer group", func() error {
		g, err := c.cli.GetConsumerGroup(t.streamID, t.topicID, t.groupID)
		if err != nil {
			return err
		}
		out = make([]Member, 0, len(g.Members))
		for _, m := range g.Members {
			out = append(out, Member{ID: m.ID, Partitions: slices.Clone(m.Partitions)})
		}
		return nil
	})
	if errors.Is(err, ierror.ErrConsumerGroupIdNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("iggy get consumer group %q on %s/%s: %w", t.Group, t.Stream, t.Topic, err)
	}
	slices.SortFunc(out, func(a, b Member) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

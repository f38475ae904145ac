package source

import (
	"cmp"
	"context"
	"fmt"
	"slices"
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
	out, found, err := c.b.members(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("iggy get consumer group %q on %s/%s: %w", t.Group, t.Stream, t.Topic, err)
	}
	if !found {
		return nil, nil
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

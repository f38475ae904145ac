package fanout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// GroupConn is the part of an Iggy connection that gathers and observes a
// cohort (*source.Conn).
type GroupConn interface {
	Topic(ctx context.Context, stream, topic, group string) (*source.Topic, error)
	Join(ctx context.Context, t *source.Topic) error
	Leave(ctx context.Context, t *source.Topic) error
	GroupMembers(ctx context.Context, t *source.Topic) ([]source.Member, error)
	Close() error
}

// ErrBusy reports a consumer group that already has members: a cohort (or
// another consumer) is still draining, and a new cohort would only take
// partitions from it.
var ErrBusy = errors.New("consumer group already has members")

// PollEvery is how often a waiting member reads the group's membership.
const PollEvery = 25 * time.Millisecond

// Anchor is the coordinator's extra member in every configured group.
type Anchor struct {
	conn    GroupConn
	topics  []*source.Topic
	anchors []Anchored
}

// Hold joins every configured topic's consumer group with conn, which must
// be a connection of its own: the anchor is a member like any other. Each
// group must be empty before the join and hold only the anchor after it;
// otherwise Hold leaves what it joined, closes conn and returns ErrBusy.
func Hold(ctx context.Context, conn GroupConn, streams []drain.Stream) (*Anchor, error) {
	a := &Anchor{conn: conn}
	for _, s := range streams {
		for _, name := range s.Topics {
			if err := a.hold(ctx, s, name); err != nil {
				a.leave(ctx)
				conn.Close()
				return nil, err
			}
		}
	}
	return a, nil
}

func (a *Anchor) hold(ctx context.Context, s drain.Stream, name string) error {
	t, err := a.conn.Topic(ctx, s.Name, name, s.Group)
	if err != nil {
		return err
	}
	members, err := a.conn.GroupMembers(ctx, t)
	if err != nil {
		return err
	}
	if len(members) > 0 {
		return fmt.Errorf("%w: %s/%s group %q has %d", ErrBusy, t.Stream, t.Topic, t.Group, len(members))
	}
	if err := a.conn.Join(ctx, t); err != nil {
		return err
	}
	a.topics = append(a.topics, t)
	if members, err = a.conn.GroupMembers(ctx, t); err != nil {
		return err
	}
	if len(members) != 1 {
		return fmt.Errorf("%w: %s/%s group %q: %d members joined with the anchor", ErrBusy, t.Stream, t.Topic, t.Group, len(members))
	}
	a.anchors = append(a.anchors, Anchored{Stream: t.Stream, Topic: t.Topic, Group: t.Group, Member: members[0].ID})
	return nil
}

// Anchors names the anchor's member id in each group, for the cohort.
func (a *Anchor) Anchors() []Anchored { return a.anchors }

// Release waits until every group has workers members besides the anchor
// (the cohort has gathered) or until deadline, then leaves every group and
// closes the connection. Leaving deals each group's partitions round-robin
// over the members present. It returns the fewest members any group had
// gathered (the anchor excluded).
func (a *Anchor) Release(ctx context.Context, workers int, deadline time.Time) (gathered int, err error) {
	defer a.conn.Close()
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	gathered, err = a.wait(wctx, workers)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil // waited long enough: release with who is there
	}
	if lerr := a.leave(ctx); lerr != nil {
		return gathered, lerr
	}
	return gathered, err
}

func (a *Anchor) wait(ctx context.Context, workers int) (int, error) {
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	for {
		fewest := -1
		for _, t := range a.topics {
			members, err := a.conn.GroupMembers(ctx, t)
			if err != nil {
				return max(fewest, 0), err
			}
			if n := len(members) - 1; fewest < 0 || n < fewest {
				fewest = n
			}
		}
		if fewest >= workers || len(a.topics) == 0 {
			return max(fewest, 0), nil
		}
		select {
		case <-ctx.Done():
			return max(fewest, 0), ctx.Err()
		case <-tick.C:
		}
	}
}

// leave leaves every joined group, bounded by a short timeout of its own
// however ctx ended (a member left behind would hold partitions).
func (a *Anchor) leave(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var errs []error
	for _, t := range a.topics {
		if err := a.conn.Leave(lctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	a.topics = nil
	return errors.Join(errs...)
}

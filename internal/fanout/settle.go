package fanout

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Settled is how one member's join went, per group.
type Settled struct {
	Stream string `json:"stream"`
	Topic  string `json:"topic"`
	// Late: the anchor had already left when this member came, so it did
	// not join (joining then would take partitions from members already
	// draining, and its leave would deal them all again).
	Late bool `json:"late,omitempty"`
	// TimedOut: the anchor was still there at SettleBy.
	TimedOut bool `json:"timed_out,omitempty"`
	// WaitMS is the time from the join to the anchor's leave.
	WaitMS int64 `json:"wait_ms"`
	// Members is the group's size once settled, and Partitions the
	// partition count each member holds then, in member-id order.
	Members    int   `json:"members"`
	Partitions []int `json:"partitions_per_member,omitempty"`
}

// membersConn is a drain connection that can also list group members.
type membersConn interface {
	drain.Conn
	GroupMembers(ctx context.Context, t *source.Topic) ([]source.Member, error)
}

// LeaseReader reads a partition's state, lease included (*state.Dynamo,
// *state.Memory).
type LeaseReader interface {
	Get(ctx context.Context, key state.Key) (state.State, bool, error)
}

// Settler makes a drain run a cohort member: its connection's Join waits
// for the anchor to leave before the run probes which partitions it owns,
// and its Leave waits until no other member holds a lease on the topic.
//
// The second wait is there because every leave deals the group's
// partitions again: a member that left as soon as its own partitions were
// drained would move partitions away from members still draining them
// (they stop those at their next poll, and nobody takes them up in this
// run). Members therefore leave together, when the last one is done, or at
// their run's deadline.
type Settler struct {
	Cohort *Cohort
	Log    *slog.Logger
	Now    func() time.Time
	// Leases, when set, lets Leave wait for the other members; Owner is this
	// run's lease owner (drain.Runner.Owner), whose own leases do not count.
	Leases LeaseReader
	Owner  string

	mu      sync.Mutex
	settled []Settled
	// run is the run's context as Join saw it: it bounds the leave barrier
	// (its deadline, or a signal), which the drain's short clean-up
	// context passed to Leave cannot.
	run     context.Context
	lingers []time.Duration
	// joined is, per group, when this member joined and which partitions
	// had messages then: the partitions some member must have taken up
	// (its lease write stamps the state) before this member may leave.
	joined map[string]joinedGroup
}

type joinedGroup struct {
	at       time.Time
	nonEmpty []uint32
	timedOut bool
}

func groupKey(t *source.Topic) string { return t.Stream + "\x00" + t.Topic + "\x00" + t.Group }

// LeaseWaitEvery is how often a member waiting to leave reads the leases.
const LeaseWaitEvery = 200 * time.Millisecond

// Lingered returns how long each Leave waited for the other members.
func (s *Settler) Lingered() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lingers)
}

// Results returns how each group settled so far.
func (s *Settler) Results() []Settled {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.settled)
}

// Wrap returns conn with the cohort's Join. A connection that cannot list
// members (not a *source.Conn) is returned as it is.
func (s *Settler) Wrap(conn drain.Conn) drain.Conn {
	mc, ok := conn.(membersConn)
	if !ok {
		return conn
	}
	return &settlingConn{membersConn: mc, s: s}
}

type settlingConn struct {
	membersConn
	s *Settler
}

// Join joins t's group unless the cohort has already settled without this
// member, then waits until the anchor has left (or SettleBy). A late member
// skips the join: the run then owns nothing, skips every partition and ends.
func (c *settlingConn) Join(ctx context.Context, t *source.Topic) error {
	s := c.s
	s.mu.Lock()
	s.run = ctx
	s.mu.Unlock()
	anchor, ok := s.Cohort.anchor(t.Stream, t.Topic, t.Group)
	if !ok {
		return c.membersConn.Join(ctx, t) // a topic the coordinator did not anchor
	}
	res := Settled{Stream: t.Stream, Topic: t.Topic}
	members, err := c.GroupMembers(ctx, t)
	if err != nil {
		return err
	}
	if !hasMember(members, anchor) {
		res.Late = true
		s.record(res, t)
		return nil
	}
	start := s.now() // before the join: every lease of this cohort is taken after it
	if err := c.membersConn.Join(ctx, t); err != nil {
		return err
	}
	members, err = c.waitAnchor(ctx, t, anchor)
	if err != nil {
		return err
	}
	res.WaitMS = s.now().Sub(start).Milliseconds()
	res.TimedOut = hasMember(members, anchor)
	res.Members = len(members)
	for _, m := range members {
		res.Partitions = append(res.Partitions, len(m.Partitions))
	}
	jg := joinedGroup{at: start, timedOut: res.TimedOut}
	for _, p := range t.Partitions {
		if p.MessagesCount > 0 {
			jg.nonEmpty = append(jg.nonEmpty, p.ID)
		}
	}
	s.mu.Lock()
	if s.joined == nil {
		s.joined = map[string]joinedGroup{}
	}
	s.joined[groupKey(t)] = jg
	s.mu.Unlock()
	s.record(res, t)
	return nil
}

// Leave waits until the other members are done with t's partitions (see
// waitLeases), or the run's context ends, then leaves. The drain bounds its
// clean-up calls with a short timeout; this wait is bounded by the run's
// deadline instead, and the leave itself gets a timeout of its own. A
// member that did not join, or whose cohort never settled, leaves at once.
func (c *settlingConn) Leave(ctx context.Context, t *source.Topic) error {
	c.s.mu.Lock()
	jg, joined := c.s.joined[groupKey(t)]
	c.s.mu.Unlock()
	if joined && !jg.timedOut {
		start := c.s.now()
		c.s.waitLeases(t, jg)
		c.s.mu.Lock()
		c.s.lingers = append(c.s.lingers, c.s.now().Sub(start))
		c.s.mu.Unlock()
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	return c.membersConn.Leave(lctx, t)
}

// leaveTimeout bounds the leave after the barrier.
const leaveTimeout = 2 * time.Second

// waitLeases polls t's partition states until the other members are
// done: every partition that had messages when this member joined has been
// taken up by some member since (its lease write is later than the join),
// and no other owner holds a live lease. Both are needed: a member that has
// not yet taken up its partitions holds no lease either. It gives up when
// the run's context ends (a minute without one).
func (s *Settler) waitLeases(t *source.Topic, jg joinedGroup) {
	if s.Leases == nil {
		return
	}
	s.mu.Lock()
	run := s.run
	s.mu.Unlock()
	var ctx context.Context
	var cancel context.CancelFunc
	if run == nil {
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	} else {
		ctx, cancel = context.WithCancel(run)
	}
	defer cancel()
	tick := time.NewTicker(LeaseWaitEvery)
	defer tick.Stop()
	for {
		busy, err := s.othersDraining(ctx, t, jg)
		if err != nil && ctx.Err() == nil {
			s.logger().Warn("cannot read the partition leases; leaving without waiting for the other members", "error", err.Error())
			return
		}
		if !busy {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// othersDraining reports whether another member is still at work on t:
// a live lease of another owner, or a partition that had messages when
// this member joined and that nobody has taken up since.
func (s *Settler) othersDraining(ctx context.Context, t *source.Topic, jg joinedGroup) (bool, error) {
	now := s.now()
	for _, p := range t.Partitions {
		st, ok, err := s.Leases.Get(ctx, state.Key{Group: t.Group, Stream: t.Stream, Topic: t.Topic, Partition: p.ID})
		if err != nil {
			return false, err
		}
		if ok && st.Owner != "" && st.Owner != s.Owner && st.LeaseExpires.After(now) {
			return true, nil
		}
		if slices.Contains(jg.nonEmpty, p.ID) && (!ok || st.UpdatedAt.Before(jg.at.Truncate(time.Millisecond))) {
			return true, nil
		}
	}
	return false, nil
}

func (s *Settler) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// waitAnchor polls the group until the anchor has left or SettleBy has
// passed, and returns the members it saw last. SettleBy bounds the wait
// between calls, never a call itself: a call cut by a deadline cuts the
// connection (SDK v0.8.0 cannot abandon one), which would leave this member
// nothing to drain. Each call keeps its own request timeout.
func (c *settlingConn) waitAnchor(ctx context.Context, t *source.Topic, anchor uint32) ([]source.Member, error) {
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	settleBy := time.NewTimer(time.Until(c.s.Cohort.SettleBy))
	defer settleBy.Stop()
	for {
		members, err := c.GroupMembers(ctx, t)
		if err != nil {
			return nil, err
		}
		if !hasMember(members, anchor) || !time.Now().Before(c.s.Cohort.SettleBy) {
			return members, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		case <-settleBy.C: // one more look, then the wait is over
		}
	}
}

func (s *Settler) record(res Settled, t *source.Topic) {
	log := s.logger()
	switch {
	case res.Late:
		log.Info("the cohort settled before this worker joined; it drains nothing", "cohort", s.Cohort.ID, "stream", t.Stream, "topic", t.Topic, "group", t.Group)
	case res.TimedOut:
		log.Warn("the cohort's anchor was still in the group at settle_by; draining what this member holds", "cohort", s.Cohort.ID,
			"stream", t.Stream, "topic", t.Topic, "group", t.Group, "waited_ms", res.WaitMS, "members", res.Members)
	default:
		log.Info("cohort settled", "cohort", s.Cohort.ID, "stream", t.Stream, "topic", t.Topic, "group", t.Group,
			"waited_ms", res.WaitMS, "members", res.Members, "partitions_per_member", res.Partitions)
	}
	s.mu.Lock()
	s.settled = append(s.settled, res)
	s.mu.Unlock()
}

func (s *Settler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func hasMember(members []source.Member, id uint32) bool {
	return slices.ContainsFunc(members, func(m source.Member) bool { return m.ID == id })
}

package iggytest

import (
	"slices"
	"time"
)

// group is a consumer group over all partitions of a topic; members are sessions.
type group struct {
	id         uint32
	name       string
	members    []*member // sorted by id
	lastPolled map[uint32]uint64
	pending    map[uint32]*revocation
}

type member struct {
	id         uint32
	sess       *session
	partitions []uint32
	rr         int // round-robin slot for polls without a partition id
}

// revocation is a partition still owned by from that moves to to once the group has
// committed what from last polled (0.8's cooperative hand-over).
type revocation struct {
	from, to *member
	since    time.Time
}

func newGroup(id uint32, name string) *group {
	return &group{id: id, name: name, lastPolled: map[uint32]uint64{}, pending: map[uint32]*revocation{}}
}

func (g *group) memberOf(s *session) *member {
	for _, m := range g.members {
		if m.sess == s {
			return m
		}
	}
	return nil
}

func (g *group) owner(p uint32) *member {
	for _, m := range g.members {
		if slices.Contains(m.partitions, p) {
			return m
		}
	}
	return nil
}

// join adds s (idempotently) and runs the simplified cooperative rebalance.
func (g *group) join(s *session, partitions int, committed func(uint32) (uint64, bool)) {
	if g.memberOf(s) != nil {
		return
	}
	id := uint32(0)
	for _, m := range g.members { // members are sorted: find the lowest free id
		if m.id != id {
			break
		}
		id++
	}
	g.members = append(g.members, &member{id: id, sess: s})
	slices.SortFunc(g.members, func(a, b *member) int { return int(a.id) - int(b.id) })

	var unowned []uint32
	for p := uint32(0); p < uint32(partitions); p++ {
		if g.owner(p) == nil {
			unowned = append(unowned, p)
		}
	}
	idle := g.idle()
	if len(unowned) > 0 {
		targets := idle
		if len(targets) == 0 {
			targets = g.members
		}
		for i, p := range unowned {
			m := targets[i%len(targets)]
			m.partitions = append(m.partitions, p)
		}
		idle = g.idle()
	}
	fair := (partitions + len(g.members) - 1) / len(g.members)
	now := time.Now()
	for _, to := range idle {
		from, p, ok := g.donor(fair)
		if !ok {
			break
		}
		g.pending[p] = &revocation{from: from, to: to, since: now}
	}
	for p := range g.pending {
		last, polled := g.lastPolled[p]
		off, ok := committed(p)
		if !polled || (ok && off >= last) {
			g.complete(p)
		}
	}
}

// idle lists members with no partitions that are not already awaiting one.
func (g *group) idle() []*member {
	var out []*member
	for _, m := range g.members {
		if len(m.partitions) > 0 {
			continue
		}
		awaiting := false
		for _, r := range g.pending {
			if r.to == m {
				awaiting = true
			}
		}
		if !awaiting {
			out = append(out, m)
		}
	}
	return out
}

// donor picks the member holding the most non-pending partitions above fair and the
// last such partition of its list.
func (g *group) donor(fair int) (*member, uint32, bool) {
	var best *member
	bestN := fair
	for _, m := range g.members {
		n := 0
		for _, p := range m.partitions {
			if g.pending[p] == nil {
				n++
			}
		}
		if n > bestN {
			best, bestN = m, n
		}
	}
	if best == nil {
		return nil, 0, false
	}
	for i := len(best.partitions) - 1; i >= 0; i-- {
		if p := best.partitions[i]; g.pending[p] == nil {
			return best, p, true
		}
	}
	return nil, 0, false
}

func (g *group) complete(p uint32) {
	r := g.pending[p]
	if r == nil {
		return
	}
	delete(g.pending, p)
	r.from.partitions = slices.DeleteFunc(r.from.partitions, func(x uint32) bool { return x == p })
	r.to.partitions = append(r.to.partitions, p)
}

// maybeComplete finishes a pending hand-over of p once committed reached the last poll.
func (g *group) maybeComplete(p uint32, committed uint64) {
	if g.pending[p] == nil {
		return
	}
	if last, ok := g.lastPolled[p]; !ok || committed >= last {
		g.complete(p)
	}
}

// expire completes hand-overs older than timeout (0.8's rebalancing_timeout).
func (g *group) expire(timeout time.Duration, now time.Time) {
	for p, r := range g.pending {
		if now.Sub(r.since) >= timeout {
			g.complete(p)
		}
	}
}

// leave removes s and deals every partition round-robin over the remaining members.
func (g *group) leave(s *session, partitions int) bool {
	m := g.memberOf(s)
	if m == nil {
		return false
	}
	for _, p := range m.partitions {
		delete(g.lastPolled, p)
	}
	g.members = slices.DeleteFunc(g.members, func(x *member) bool { return x == m })
	g.rebalance(partitions)
	return true
}

func (g *group) rebalance(partitions int) {
	clear(g.pending)
	for _, m := range g.members {
		m.partitions = m.partitions[:0]
		m.rr = 0
	}
	if len(g.members) == 0 {
		return
	}
	for p := 0; p < partitions; p++ {
		m := g.members[p%len(g.members)]
		m.partitions = append(m.partitions, uint32(p))
	}
}

// nextPartition advances m's round-robin slot, skipping partitions being handed over.
func (g *group) nextPartition(m *member) (uint32, bool) {
	for range m.partitions {
		p := m.partitions[m.rr%len(m.partitions)]
		m.rr++
		if g.pending[p] == nil {
			return p, true
		}
	}
	return 0, false
}

// currentPartition is the slot a store without a partition id resolves to (0.8 does
// not advance it, so after a poll it points at the next partition).
func (g *group) currentPartition(m *member) (uint32, bool) {
	if len(m.partitions) == 0 {
		return 0, false
	}
	return m.partitions[m.rr%len(m.partitions)], true
}

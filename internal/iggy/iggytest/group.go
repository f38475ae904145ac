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
	// generation counts the group's changes (members, assignments); Sync
	// reports it. ownerGen is, per partition, the generation at which its
	// current owner got it (0.10's owner_generation), owners who that is.
	generation uint64
	ownerGen   map[uint32]uint64
	owners     map[uint32]*member
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
	return &group{id: id, name: name, lastPolled: map[uint32]uint64{}, pending: map[uint32]*revocation{},
		ownerGen: map[uint32]uint64{}, owners: map[uint32]*member{}}
}

// changed bumps the generation after a change and stamps the partitions whose
// owner moved with it.
func (g *group) changed() {
	g.generation++
	now := map[uint32]*member{}
	for _, m := range g.members {
		for _, p := range m.partitions {
			now[p] = m
		}
	}
	for p, m := range now {
		if g.owners[p] != m {
			g.ownerGen[p] = g.generation
		}
	}
	for p := range g.owners {
		if now[p] == nil {
			delete(g.ownerGen, p)
		}
	}
	g.owners = now
}

// owns reports whether m owns p, pending revocation included.
func (m *member) owns(p uint32) bool { return slices.Contains(m.partitions, p) }

// revoking reports whether p is pending revocation from m.
func (g *group) revoking(m *member, p uint32) bool {
	r := g.pending[p]
	return r != nil && r.from == m
}

// pollable lists m's partitions that are not pending revocation, sorted (what 0.9's
// Sync returns).
func (g *group) pollable(m *member) []uint32 {
	out := make([]uint32, 0, len(m.partitions))
	for _, p := range m.partitions {
		if !g.revoking(m, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// addMember adds s with the lowest free member id, or returns nil when s is one.
func (g *group) addMember(s *session) *member {
	if g.memberOf(s) != nil {
		return nil
	}
	id := uint32(0)
	for _, m := range g.members { // members are sorted: find the lowest free id
		if m.id != id {
			break
		}
		id++
	}
	m := &member{id: id, sess: s}
	g.members = append(g.members, m)
	slices.SortFunc(g.members, func(a, b *member) int { return int(a.id) - int(b.id) })
	return m
}

// joinEven adds s (idempotently) with 0.9's cooperative rebalance: unowned
// partitions are dealt to the members with the fewest, then partitions move from
// the member with the most (counting those pending revocation to it as its own and
// those pending from it as gone) to the one with the fewest until no two differ by
// more than one. A moved partition goes at once when the group never polled it or
// committed up to its last poll; otherwise it is pending revocation until then (or
// the rebalance timeout).
func (g *group) joinEven(s *session, partitions int, committed func(uint32) (uint64, bool)) {
	if g.addMember(s) == nil {
		return
	}
	for p := uint32(0); p < uint32(partitions); p++ {
		if g.owner(p) == nil {
			m := g.fewest()
			m.partitions = append(m.partitions, p)
		}
	}
	now := time.Now()
	for {
		lo, hi := g.fewest(), g.most()
		if g.effective(hi)-g.effective(lo) <= 1 {
			break
		}
		var p uint32
		found := false
		for i := len(hi.partitions) - 1; i >= 0; i-- {
			if q := hi.partitions[i]; g.pending[q] == nil {
				p, found = q, true
				break
			}
		}
		if !found {
			break
		}
		g.pending[p] = &revocation{from: hi, to: lo, since: now}
		last, polled := g.lastPolled[p]
		if off, ok := committed(p); !polled || (ok && off >= last) {
			g.completeQuiet(p)
		}
	}
	g.changed()
}

// effective is m's partition count after its pending revocations complete.
func (g *group) effective(m *member) int {
	n := len(m.partitions)
	for _, r := range g.pending {
		if r.from == m {
			n--
		}
		if r.to == m {
			n++
		}
	}
	return n
}

func (g *group) fewest() *member {
	var best *member
	for _, m := range g.members {
		if best == nil || g.effective(m) < g.effective(best) {
			best = m
		}
	}
	return best
}

func (g *group) most() *member {
	var best *member
	for _, m := range g.members {
		if best == nil || g.effective(m) > g.effective(best) {
			best = m
		}
	}
	return best
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
	if g.addMember(s) == nil {
		return
	}
	defer g.changed()

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
			g.completeQuiet(p)
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

// complete hands p over to its revocation's target and bumps the generation.
func (g *group) complete(p uint32) {
	if g.completeQuiet(p) {
		g.changed()
	}
}

func (g *group) completeQuiet(p uint32) bool {
	r := g.pending[p]
	if r == nil {
		return false
	}
	delete(g.pending, p)
	r.from.partitions = slices.DeleteFunc(r.from.partitions, func(x uint32) bool { return x == p })
	r.to.partitions = append(r.to.partitions, p)
	return true
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
	g.changed()
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

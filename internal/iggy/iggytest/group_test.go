package iggytest

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestGroupAssignment(t *testing.T) {
	never := func(uint32) (uint64, bool) { return 0, false }
	type step struct {
		join, leave int // session index; -1 = none
	}
	tests := []struct {
		name       string
		partitions int
		steps      []step
		want       string // members' partitions in member-id order
	}{
		{"lone member owns all", 4, []step{{0, -1}}, "[[0 1 2 3]]"},
		{"second member takes one from the end", 4, []step{{0, -1}, {1, -1}}, "[[0 1 2] [3]]"},
		{"third member", 4, []step{{0, -1}, {1, -1}, {2, -1}}, "[[0 1] [3] [2]]"},
		{"fourth member", 4, []step{{0, -1}, {1, -1}, {2, -1}, {3, -1}}, "[[0] [3] [2] [1]]"},
		{"more members than partitions", 2, []step{{0, -1}, {1, -1}, {2, -1}}, "[[0] [1] []]"},
		{"join is idempotent", 2, []step{{0, -1}, {0, -1}}, "[[0 1]]"},
		{"leave rebalances round robin", 5, []step{{0, -1}, {1, -1}, {2, -1}, {-1, 0}}, "[[0 2 4] [1 3]]"},
		{"last leaves", 3, []step{{0, -1}, {-1, 0}}, "[]"},
		{"rejoin takes lowest free id", 2, []step{{0, -1}, {1, -1}, {-1, 0}, {2, -1}}, "[[1] [0]]"},
		{"no partitions", 0, []step{{0, -1}, {1, -1}}, "[[] []]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sessions := []*session{{id: 1}, {id: 2}, {id: 3}, {id: 4}}
			g := newGroup(0, "g")
			for _, s := range tc.steps {
				if s.join >= 0 {
					g.join(sessions[s.join], tc.partitions, never)
				}
				if s.leave >= 0 && !g.leave(sessions[s.leave], tc.partitions) {
					t.Fatalf("leave of session %d failed", s.leave)
				}
			}
			var got [][]uint32
			for _, m := range g.members {
				got = append(got, m.partitions)
			}
			if s := fmt.Sprint(got); s != tc.want {
				t.Fatalf("assignment %s, want %s", s, tc.want)
			}
		})
	}
}

func TestGroupPendingRevocation(t *testing.T) {
	a, b := &session{id: 1}, &session{id: 2}
	g := newGroup(0, "g")
	committed := map[uint32]uint64{}
	lookup := func(p uint32) (uint64, bool) { o, ok := committed[p]; return o, ok }
	g.join(a, 2, lookup)
	g.lastPolled[1] = 7
	committed[1] = 3
	g.join(b, 2, lookup)
	ma, mb := g.members[0], g.members[1]
	if !slices.Equal(ma.partitions, []uint32{0, 1}) || len(mb.partitions) != 0 || g.pending[1] == nil {
		t.Fatalf("before commit: a %v b %v pending %v", ma.partitions, mb.partitions, g.pending)
	}
	// Round robin skips the partition being handed over.
	for range 3 {
		if p, ok := g.nextPartition(ma); !ok || p != 0 {
			t.Fatalf("round robin gave %d, %v; want 0 only", p, ok)
		}
	}
	g.maybeComplete(1, 6)
	if g.pending[1] == nil {
		t.Fatal("hand-over completed before the commit reached the last poll")
	}
	g.maybeComplete(1, 7)
	if !slices.Equal(ma.partitions, []uint32{0}) || !slices.Equal(mb.partitions, []uint32{1}) || len(g.pending) != 0 {
		t.Fatalf("after commit: a %v b %v pending %v", ma.partitions, mb.partitions, g.pending)
	}

	// Timeout completes a hand-over whose owner never commits.
	c := &session{id: 3}
	g2 := newGroup(1, "g2")
	g2.join(a, 2, lookup)
	g2.lastPolled[1] = 9
	g2.join(c, 2, lookup)
	g2.expire(time.Minute, time.Now())
	if len(g2.pending) != 1 {
		t.Fatal("hand-over expired early")
	}
	g2.expire(time.Minute, time.Now().Add(2*time.Minute))
	if len(g2.pending) != 0 || !slices.Equal(g2.members[1].partitions, []uint32{1}) {
		t.Fatalf("after timeout: pending %v members %v", g2.pending, g2.members[1].partitions)
	}
}

func TestMurmur3(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
	}{
		{"", 0},
		{"hello", 0x248bfa47},
		{"The quick brown fox jumps over the lazy dog", 0x2e4ff723},
	}
	for _, tc := range tests {
		if got := murmur3([]byte(tc.in), 0); got != tc.want {
			t.Errorf("murmur3(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

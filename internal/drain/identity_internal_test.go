package drain

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// TestIdentity: what the state records as a partition's incarnation — the
// creation time on 0.8 and 0.9, 0.10's own incarnation (exact) when the
// server reports one — never confuses the two, and stays below 2^53 so that
// every DynamoDB client carries it exactly.
func TestIdentity(t *testing.T) {
	const createdAt = 1_796_117_752_292_332 // µs, 2026
	for _, tc := range []struct {
		p     source.PartitionInfo
		exact bool
		want  uint64
	}{
		{source.PartitionInfo{CreatedAt: createdAt}, false, createdAt},
		{source.PartitionInfo{CreatedAt: createdAt, Incarnation: 7}, true, exactBase + 7},
		{source.PartitionInfo{CreatedAt: createdAt, Incarnation: exactBase}, false, createdAt}, // too large to tag: the creation time decides
	} {
		got := identity(tc.p)
		if got != tc.want || exactIdentity(got) != tc.exact || got >= 1<<53 {
			t.Errorf("identity(%+v) = %d (exact %v), want %d (exact %v)", tc.p, got, exactIdentity(got), tc.want, tc.exact)
		}
	}
	if exactIdentity(createdAt) {
		t.Fatal("a creation time reads as an exact incarnation")
	}
}

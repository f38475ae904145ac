package drain

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
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

// recordedMessage proves an incarnation by the recorded message's server
// time at or after its offset, disproves it by another message at the
// offset, and otherwise leaves it unknown.
func TestRecordedMessage(t *testing.T) {
	const ts = 1_796_117_752_292_332
	for _, tc := range []struct {
		name        string
		m           batch.Message
		off, ts     uint64
		same, known bool
	}{
		{"the message itself", batch.Message{Offset: 5, Timestamp: ts}, 5, ts, true, true},
		{"another message at its offset", batch.Message{Offset: 5, Timestamp: ts + 1}, 5, ts, false, true},
		{"the first message after a gap marker", batch.Message{Offset: 6, Timestamp: ts}, 5, ts, true, true},
		{"a later message of another time (retention took it)", batch.Message{Offset: 9, Timestamp: ts + 7}, 5, ts, false, false},
		{"no time recorded", batch.Message{Offset: 5, Timestamp: ts}, 5, 0, false, false},
		{"a message before the offset", batch.Message{Offset: 4, Timestamp: ts}, 5, ts, false, false},
	} {
		same, known := recordedMessage(&tc.m, tc.off, tc.ts)
		if same != tc.same || known != tc.known {
			t.Errorf("%s: recordedMessage = %v, %v; want %v, %v", tc.name, same, known, tc.same, tc.known)
		}
	}
}

package source

import "testing"

func TestPartitionOffsetsLag(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name               string
		current, committed *uint64
		want               uint64
	}{
		{"empty partition", nil, nil, 0},
		{"nothing committed", u(249), nil, 250},
		{"behind", u(249), u(199), 50},
		{"caught up", u(249), u(249), 0},
	} {
		if got := (PartitionOffsets{Current: tc.current, Committed: tc.committed}).Lag(); got != tc.want {
			t.Errorf("%s: lag %d, want %d", tc.name, got, tc.want)
		}
	}
}

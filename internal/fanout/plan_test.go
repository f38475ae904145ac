package fanout

import (
	"strings"
	"testing"
	"time"
)

func lags(ms ...uint64) []Lag {
	out := make([]Lag, len(ms))
	for i, m := range ms {
		out[i] = Lag{Stream: "s", Topic: "t", Partition: uint32(i), Messages: m}
	}
	return out
}

func TestDecide(t *testing.T) {
	minute := time.Minute
	tests := []struct {
		name    string
		lags    []Lag
		sizing  Sizing
		workers int
		reason  string
	}{
		{"max_workers 1 is today's single run", lags(1e9, 1e9), Sizing{MaxWorkers: 1, Rate: 1000, Budget: minute}, 1, "max_workers is 1"},
		{"no lag", lags(0, 0, 0), Sizing{MaxWorkers: 8, Rate: 1000, Budget: minute}, 1, "no lag"},
		{"one worker keeps up", lags(20000, 20000), Sizing{MaxWorkers: 8, Rate: 1000, Budget: minute}, 1, "1 wanted"},
		{"exactly one worker's budget", lags(30000, 30000), Sizing{MaxWorkers: 8, Rate: 1000, Budget: minute}, 1, "1 wanted"},
		{"just over one budget", lags(30000, 30001), Sizing{MaxWorkers: 8, Rate: 1000, Budget: minute}, 2, "2 wanted"},
		{"capped by max_workers", lags(1e6, 1e6, 1e6, 1e6), Sizing{MaxWorkers: 3, Rate: 1000, Budget: minute}, 3, "capped at max_workers 3"},
		{"capped by partitions behind", lags(1e6, 0, 1e6, 0), Sizing{MaxWorkers: 10, Rate: 1000, Budget: minute}, 2, "capped at the 2 partitions behind"},
		{"no budget left", lags(1e6), Sizing{MaxWorkers: 4, Rate: 1000, Budget: -time.Second}, 1, "no drain time left"},
		{"no rate", lags(1e6), Sizing{MaxWorkers: 4, Rate: 0, Budget: minute}, 1, "no rate"},
		{"measured rate named", lags(1e6, 1e6), Sizing{MaxWorkers: 4, Rate: 50000, Measured: true, Budget: minute}, 1, "(measured)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.lags, tc.sizing)
			if p.Workers != tc.workers {
				t.Errorf("workers = %d, want %d (%s)", p.Workers, tc.workers, p.Reason)
			}
			if !strings.Contains(p.Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", p.Reason, tc.reason)
			}
			var sum uint64
			for _, l := range tc.lags {
				sum += l.Messages
			}
			if p.Lag != sum {
				t.Errorf("lag = %d, want %d", p.Lag, sum)
			}
		})
	}
}

func TestRate(t *testing.T) {
	var r Rate
	if v, ok := r.Get(123); v != 123 || ok {
		t.Fatalf("before any run: %v %v, want the default", v, ok)
	}
	r.Observe(500, 2*time.Second, false)                // too few to count
	r.Observe(MinSample*10, 500*time.Millisecond, true) // too short to count
	if _, ok := r.Get(123); ok {
		t.Fatal("a small or short run counted as a measurement")
	}
	r.Observe(4000, 2*time.Second, true) // busy: stopped at its deadline
	if v, ok := r.Get(123); !ok || v != 2000 {
		t.Fatalf("after a busy run: %v %v, want 2000", v, ok)
	}
	r.Observe(4*MinSample, 10*time.Second, false) // 4000/s, large enough
	if v, _ := r.Get(0); v != 3000 {
		t.Fatalf("average = %v, want 3000", v)
	}
}

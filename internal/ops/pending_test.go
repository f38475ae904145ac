package ops

import (
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
)

func TestPendingExplanation(t *testing.T) {
	now := time.Date(2026, 3, 16, 14, 5, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	part := func(pending uint64, since *time.Time) drain.PartitionSummary {
		return drain.PartitionSummary{Stream: "app", Topic: "logs", Partition: 0, Pending: pending, PendingSince: since}
	}
	tests := []struct {
		name string
		env  map[string]string
		p    drain.PartitionSummary
		want string
	}{
		{"the issue's example", nil, part(250, at(12*time.Second)),
			"250 messages pending in app/logs partition 0; first is 12s old; written at max_file_age=5m (in 4m48s) or when max_file_size=8MiB is reached"},
		{"age unknown (PendingSince not reported)", nil, part(250, nil),
			"250 messages pending in app/logs partition 0; written at max_file_age=5m or when max_file_size=8MiB is reached"},
		{"messages rotation", map[string]string{"SINK_FILE_ROTATION": "messages", "SINK_MAX_MESSAGES_PER_FILE": "100", "SINK_MAX_FILE_AGE": "1m"}, part(50, at(20*time.Second)),
			"50 messages pending in app/logs partition 0; first is 20s old; written at max_file_age=1m (in 40s) or when max_messages_per_file=100 is reached"},
		{"size and count", map[string]string{"SINK_MAX_FILE_SIZE": "64MB", "SINK_MAX_MESSAGES_PER_FILE": "5000", "SINK_MAX_FILE_AGE": "1h30m"}, part(1, nil),
			"1 message pending in app/logs partition 0; written at max_file_age=1h30m or when max_file_size=64MB or max_messages_per_file=5000 is reached"},
		{"already due (the run ran out of time)", nil, part(7, at(6*time.Minute)),
			"7 messages pending in app/logs partition 0; first is 6m old; written at max_file_age=5m (due now: the next run writes it) or when max_file_size=8MiB is reached"},
		{"nothing pending", nil, part(0, nil), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PendingExplanation(tc.p, loadEnv(t, tc.env), now); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestByteSizeAndShortDuration(t *testing.T) {
	for n, want := range map[int64]string{8 << 20: "8MiB", 64_000_000: "64MB", 1000: "1KB", 1023: "1023B", 5 << 40: "5TiB", 1536: "1536B", 2048: "2KiB"} {
		if got := ByteSize(n); got != want {
			t.Errorf("ByteSize(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{5 * time.Minute: "5m", time.Hour: "1h", 90 * time.Second: "1m30s", 250 * time.Millisecond: "250ms", 2*time.Hour + 5*time.Minute: "2h5m"} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

package ops

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
)

// PendingExplanation says why a run left a partition's messages in Iggy
// and when they will be written, e.g.
//
//	250 messages pending in app/logs partition 0; first is 12s old; written at max_file_age=5m (in 4m48s) or when max_file_size=8MiB is reached
//
// It is "" when nothing is pending. now is the time the run ended.
func PendingExplanation(p drain.PartitionSummary, cfg *config.Config, now time.Time) string {
	if p.Pending == 0 {
		return ""
	}
	pc := &cfg.Plugin
	noun := "messages"
	if p.Pending == 1 {
		noun = "message"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s pending in %s/%s partition %d", p.Pending, noun, p.Stream, p.Topic, p.Partition)
	age := fmt.Sprintf("max_file_age=%s", ShortDuration(pc.MaxFileAge))
	if p.PendingSince != nil {
		old := now.Sub(*p.PendingSince)
		fmt.Fprintf(&b, "; first is %s old", ShortDuration(old.Round(time.Second)))
		if left := pc.MaxFileAge - old; left > 0 {
			age += fmt.Sprintf(" (in %s)", ShortDuration(left.Round(time.Second)))
		} else {
			age += " (due now: the next run writes it)"
		}
	}
	fmt.Fprintf(&b, "; written at %s or when %s is reached", age, rotationLimit(pc))
	return b.String()
}

// rotationLimit names the threshold that fills an object.
func rotationLimit(pc *config.Plugin) string {
	msgs := fmt.Sprintf("max_messages_per_file=%d", pc.MaxMessagesPerFile)
	if pc.MaxObjectBytes() == 0 {
		return msgs
	}
	size := "max_file_size=" + ByteSize(pc.MaxFileSize)
	if pc.MaxMessagesPerFile > 0 {
		return size + " or " + msgs
	}
	return size
}

// LogPending logs PendingExplanation for every partition of sum that left
// messages pending.
func LogPending(log *slog.Logger, cfg *config.Config, sum *drain.Summary, now time.Time) {
	if sum == nil {
		return
	}
	for _, p := range sum.Partitions {
		if msg := PendingExplanation(p, cfg, now); msg != "" {
			log.Info(msg, "stream", p.Stream, "topic", p.Topic, "partition", p.Partition, "pending", p.Pending)
		}
	}
}

// ShortDuration writes d without zero trailing units: 5m, 1h, 1m30s, 250ms.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ByteSize writes n in the unit that gives the smallest whole number, as
// the configuration accepts it back: 8MiB, 64MB, 1000B.
func ByteSize(n int64) string {
	best, unit := n, "B"
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}, {1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}} {
		if n >= u.size && n%u.size == 0 && n/u.size < best {
			best, unit = n/u.size, u.name
		}
	}
	return fmt.Sprintf("%d%s", best, unit)
}

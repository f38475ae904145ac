package drain

import (
	"log/slog"
	"time"
)

// Summary is what one run did, per partition. It is the Lambda's result.
type Summary struct {
	Owner      string             `json:"owner"`
	Started    time.Time          `json:"started"`
	DurationMS int64              `json:"duration_ms"`
	Objects    uint64             `json:"objects"`
	Messages   uint64             `json:"messages"`
	Bytes      uint64             `json:"bytes"`
	Failed     int                `json:"failed_partitions"`
	Partitions []PartitionSummary `json:"partitions"`
}

// PartitionSummary is one partition's part of a run.
type PartitionSummary struct {
	Stream    string `json:"stream"`
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	Objects   uint64 `json:"objects"`
	Messages  uint64 `json:"messages"`
	// Bytes counts the bytes stored in S3 (after compression).
	Bytes uint64 `json:"bytes"`
	// FirstOffset and LastOffset bound what this run wrote; nil when it wrote nothing.
	FirstOffset *uint64 `json:"first_offset,omitempty"`
	LastOffset  *uint64 `json:"last_offset,omitempty"`
	// Committed is the last offset durably written, after the run.
	Committed *uint64 `json:"committed,omitempty"`
	// Lag is how many messages Iggy holds beyond Committed after the run.
	Lag uint64 `json:"lag"`
	// Pending counts messages read but left for a later run (a partial object not yet due).
	Pending         uint64 `json:"pending,omitempty"`
	Gaps            []Gap  `json:"gaps,omitempty"`
	InvalidPayloads uint64 `json:"invalid_payloads,omitempty"`
	Retries         uint64 `json:"retries,omitempty"`
	Recovered       bool   `json:"recovered,omitempty"`
	Skipped         string `json:"skipped,omitempty"`
	Stopped         string `json:"stopped,omitempty"`
	Error           string `json:"error,omitempty"`

	// PendingSince is the server time of the first message left pending.
	PendingSince *time.Time `json:"pending_since,omitempty"`
}

// Gap is a range of offsets Iggy no longer had when the sink needed it
// (retention). The sink writes a marker object for it and continues.
type Gap struct {
	First     uint64 `json:"first"`
	Last      uint64 `json:"last"`
	MarkerKey string `json:"marker_key"`
}

func (p *PartitionSummary) wrote(first, last, messages, bytes uint64) {
	if p.FirstOffset == nil {
		f := first
		p.FirstOffset = &f
	}
	l := last
	p.LastOffset = &l
	p.Objects++
	p.Messages += messages
	p.Bytes += bytes
}

// Log writes the run's one summary line: "run finished", or "run failed"
// with the error.
func (s *Summary) Log(log *slog.Logger, err error) {
	attrs := []any{"objects", s.Objects, "messages", s.Messages, "bytes", s.Bytes, "failed_partitions", s.Failed, "duration_ms", s.DurationMS, "partitions", s.Partitions}
	if err != nil {
		log.Error("run failed", append(attrs, "error", err.Error())...)
		return
	}
	log.Info("run finished", attrs...)
}

package drain

import (
	"log/slog"
	"time"
)

// Summary is what one run did, per partition. It is the Lambda's result.
type Summary struct {
	Owner   string    `json:"owner"`
	Started time.Time `json:"started"`
	// Iggy says which Iggy release and protocol the server speaks, as the
	// connection found out ("Iggy 0.9 (protocol 0.11.0)").
	Iggy       string `json:"iggy,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	Objects    uint64 `json:"objects"`
	Messages   uint64 `json:"messages"`
	Bytes      uint64 `json:"bytes"`
	// Failed counts partitions that failed; a stop is not a failure.
	Failed int `json:"failed_partitions"`
	// Stopped says why the run ended early: "signal" (its context was
	// cancelled) or "deadline" (its deadline came); empty when it ran out
	// of work.
	Stopped string `json:"stopped,omitempty"`
	// Leases and LeasesReleased count the partition leases this run took
	// and the ones it gave back; Groups and GroupsLeft the consumer groups
	// joined and left.
	Leases         int                `json:"leases"`
	LeasesReleased int                `json:"leases_released"`
	Groups         int                `json:"groups"`
	GroupsLeft     int                `json:"groups_left"`
	Partitions     []PartitionSummary `json:"partitions"`
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
	// Lag is how many messages Iggy holds beyond Committed after the run;
	// 0 for a partition Held elsewhere, whose holder reports it.
	Lag uint64 `json:"lag"`
	// Held says another member of the group or another run holds the
	// partition (see Skipped): this run read no committed offset for it, so
	// its lag is not this run's to report.
	Held bool `json:"held,omitempty"`
	// Idle says the partition had nothing past its archived position, and
	// was left without taking its lease (no state write).
	Idle bool `json:"idle,omitempty"`
	// Pending counts messages read but left for a later run (a partial
	// object not yet due), and PendingSince is the server time of the first.
	Pending      uint64     `json:"pending,omitempty"`
	PendingSince *time.Time `json:"pending_since,omitempty"`
	Gaps         []Gap      `json:"gaps,omitempty"`
	// InvalidPayloads counts payloads the invalid_payload policy handled
	// (kept as base64, or rejected to an error object) in the objects this
	// run rendered;
	// MalformedHeaders counts messages whose user headers could not be
	// decoded and were left out of their records, and MalformedHeadersAt is
	// the first such offset.
	InvalidPayloads    uint64  `json:"invalid_payloads,omitempty"`
	MalformedHeaders   uint64  `json:"malformed_headers,omitempty"`
	MalformedHeadersAt *uint64 `json:"malformed_headers_at,omitempty"`
	// Existing counts objects whose key already held them (repeated writes);
	// Conflicts counts keys that held other bytes and were left as they were.
	Existing  uint64 `json:"existing,omitempty"`
	Conflicts uint64 `json:"conflicts,omitempty"`
	Retries   uint64 `json:"retries,omitempty"`
	Recovered bool   `json:"recovered,omitempty"`
	// PollBytesMax is the most payload and user-header bytes one poll of
	// the reader took in (max_poll_bytes bounds it).
	PollBytesMax uint64 `json:"poll_bytes_max,omitempty"`
	// Recreated is set when the partition was found deleted and re-created
	// in Iggy: its offsets start again at 0 under a new generation.
	Recreated bool `json:"recreated,omitempty"`
	// RenamedFrom names the stream/topic whose state this partition's was
	// carried over from (renamed on the server).
	RenamedFrom string `json:"renamed_from,omitempty"`
	Generation  uint32 `json:"generation,omitempty"`
	Skipped     string `json:"skipped,omitempty"`
	Stopped     string `json:"stopped,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Gap is a range of offsets Iggy no longer had when the sink needed it
// (retention), or never had (a hole its offsets skip). The sink writes a
// marker object for it and continues.
type Gap struct {
	First     uint64 `json:"first"`
	Last      uint64 `json:"last"`
	MarkerKey string `json:"marker_key"`
	// Cause is CauseRetention, CauseIggyHole, CauseRecreated or CauseSkipped.
	Cause string `json:"cause"`
}

func (p *PartitionSummary) wrote(w Written) {
	if w.Gap {
		p.Gaps = append(p.Gaps, Gap{First: w.First, Last: w.Last, MarkerKey: w.Key, Cause: w.Cause})
		return
	}
	if p.FirstOffset == nil {
		f := w.First
		p.FirstOffset = &f
	}
	l := w.Last
	p.LastOffset = &l
	p.Objects++
	p.Messages += w.Messages
	p.Bytes += w.Bytes
	if w.Existed {
		p.Existing++
	}
}

// GapMessages is how many offsets the run reported as gaps of messages
// the archive lacks: deleted by retention or with the partition. Holes,
// offsets Iggy never gave a message, are not counted (see HoleOffsets),
// nor offsets passed over because the group was moved past them.
func (p *PartitionSummary) GapMessages() uint64 {
	var n uint64
	for _, g := range p.Gaps {
		if g.Cause != CauseIggyHole && g.Cause != CauseSkipped {
			n += g.Last - g.First + 1
		}
	}
	return n
}

// HoleOffsets is how many offsets the run found Iggy had skipped.
func (p *PartitionSummary) HoleOffsets() uint64 {
	var n uint64
	for _, g := range p.Gaps {
		if g.Cause == CauseIggyHole {
			n += g.Last - g.First + 1
		}
	}
	return n
}

func (s *Summary) total() {
	s.Objects, s.Messages, s.Bytes, s.Failed = 0, 0, 0, 0
	for _, p := range s.Partitions {
		s.Objects += p.Objects
		s.Messages += p.Messages
		s.Bytes += p.Bytes
		if p.Error != "" {
			s.Failed++
		}
	}
}

// Log writes the run's one summary line: "run finished", "run stopped" (by
// a signal or the deadline, at INFO: a stop is not a failure) or "run
// failed" with the error. It reports what the run did, leases and groups
// included.
func (s *Summary) Log(log *slog.Logger, err error) {
	attrs := []any{"objects", s.Objects, "messages", s.Messages, "bytes", s.Bytes, "failed_partitions", s.Failed,
		"duration", time.Duration(s.DurationMS) * time.Millisecond,
		"leases_released", s.LeasesReleased, "leases", s.Leases, "groups_left", s.GroupsLeft, "groups", s.Groups,
		"partitions", s.Partitions}
	switch {
	case err != nil:
		log.Error("run failed", append(attrs, "error", err.Error())...)
	case s.Stopped != "":
		log.Info("run stopped", append(attrs, "stopped", s.Stopped)...)
	default:
		log.Info("run finished", attrs...)
	}
}

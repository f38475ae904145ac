package fanout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Mode is what an invocation was asked to do.
type Mode string

// The modes. A scheduled event, an empty payload or any JSON without a
// "mode" is a drain: the tick that may fan out.
const (
	ModeDrain  Mode = "drain"
	ModeWorker Mode = "worker"
	ModeAudit  Mode = "audit"
	// ModeReplay produces the archive back into Iggy (ops.ReplayRequest in
	// Request.Replay) for as long as the invocation has.
	ModeReplay Mode = "replay"
)

// Request is an invocation's payload as far as the sink reads it.
type Request struct {
	Mode Mode `json:"mode"`
	// Cohort is set for ModeWorker: the cohort the worker belongs to.
	Cohort *Cohort `json:"cohort,omitempty"`
	// Replay is ModeReplay's request, as given (read by its handler).
	Replay json.RawMessage `json:"replay,omitempty"`
}

// Cohort is what a coordinator tells its workers.
type Cohort struct {
	// ID names the cohort in logs (the coordinator's request id).
	ID string `json:"id"`
	// Workers is the number of members that drain, the coordinator included.
	Workers int `json:"workers"`
	// Anchors name, per consumer group, the member that holds the group
	// while the cohort gathers; its leave is the signal to start.
	Anchors []Anchored `json:"anchors"`
	// NotAfter: a worker that starts later than this is too late to take
	// part (a delayed or retried event) and exits at once.
	NotAfter time.Time `json:"not_after"`
	// SettleBy: a member still waiting for the anchor at this time stops
	// waiting and drains what it has.
	SettleBy time.Time `json:"settle_by"`
}

// Anchored is the anchor's member id in one topic's consumer group.
type Anchored struct {
	Stream string `json:"stream"`
	Topic  string `json:"topic"`
	Group  string `json:"group"`
	Member uint32 `json:"member"`
}

// anchor returns the anchor's member id for stream/topic/group.
func (c *Cohort) anchor(stream, topic, group string) (uint32, bool) {
	for _, a := range c.Anchors {
		if a.Stream == stream && a.Topic == topic && a.Group == group {
			return a.Member, true
		}
	}
	return 0, false
}

// Parse reads an invocation's payload. Anything that is not a JSON object
// with a "mode" (the EventBridge scheduled event, {}, nothing) is a drain.
// An unknown mode, or a worker without its cohort, is an error that names
// what is accepted.
func Parse(payload []byte) (Request, error) {
	var probe struct {
		Mode json.RawMessage `json:"mode"`
	}
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &probe) != nil ||
		len(probe.Mode) == 0 || string(probe.Mode) == "null" {
		return Request{Mode: ModeDrain}, nil
	}
	var r Request
	if err := json.Unmarshal(trimmed, &r); err != nil {
		return Request{}, fmt.Errorf("invocation payload with \"mode\": %w", err)
	}
	switch r.Mode {
	case ModeDrain, ModeAudit:
		r.Cohort, r.Replay = nil, nil
		return r, nil
	case ModeReplay:
		r.Cohort = nil
		return r, nil
	case ModeWorker:
		if err := r.Cohort.validate(); err != nil {
			return Request{}, fmt.Errorf("invocation payload: mode %q: %w", r.Mode, err)
		}
		return r, nil
	}
	return Request{}, fmt.Errorf("invocation payload: mode %q is not one of drain, worker, audit, replay", r.Mode)
}

func (c *Cohort) validate() error {
	switch {
	case c == nil:
		return fmt.Errorf("no cohort")
	case c.Workers < 1:
		return fmt.Errorf("cohort %q: workers %d is below 1", c.ID, c.Workers)
	case len(c.Anchors) == 0:
		return fmt.Errorf("cohort %q: no anchors", c.ID)
	case c.NotAfter.IsZero() || c.SettleBy.IsZero():
		return fmt.Errorf("cohort %q: not_after and settle_by are required", c.ID)
	}
	return nil
}

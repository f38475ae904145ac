package fanout

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Lag is one partition's backlog: messages in Iggy beyond the group's
// committed offset.
type Lag struct {
	Stream, Topic string
	Partition     uint32
	Messages      uint64
}

// Sizing is what a tick knows when it decides how many workers to start.
type Sizing struct {
	// MaxWorkers bounds the cohort, the coordinator included (1 = no fan-out).
	MaxWorkers int
	// Rate is how many messages one worker drains per second; Measured says
	// whether it comes from runs of this function or from configuration.
	Rate     float64
	Measured bool
	// Budget is how long one worker drains: the invocation's time less the
	// settle wait and the margins kept for clean-up.
	Budget time.Duration
}

// Plan is a tick's decision, reported in its result and logs.
type Plan struct {
	Workers int `json:"workers"`
	// Lag is the backlog over every partition; Behind counts the partitions
	// that have any (more workers than that cannot help: one member drains
	// a partition).
	Lag    uint64 `json:"lag"`
	Behind int    `json:"partitions_behind"`
	// PerWorker is what one worker drains in its budget at Rate.
	PerWorker  uint64  `json:"per_worker"`
	Rate       float64 `json:"rate"`
	RateSource string  `json:"rate_source"`
	Reason     string  `json:"reason"`
}

// Decide sizes the cohort: enough workers to drain the lag within one
// invocation at the given rate, at least 1, at most MaxWorkers and the
// number of partitions that are behind.
func Decide(lags []Lag, s Sizing) Plan {
	p := Plan{Workers: 1, Rate: s.Rate, RateSource: "configured (worker_rate)"}
	if s.Measured {
		p.RateSource = "measured"
	}
	for _, l := range lags {
		p.Lag += l.Messages
		if l.Messages > 0 {
			p.Behind++
		}
	}
	budget := max(s.Budget, 0)
	p.PerWorker = uint64(max(s.Rate, 0) * budget.Seconds())
	switch {
	case s.MaxWorkers <= 1:
		p.Reason = "max_workers is 1: no fan-out"
		return p
	case p.Lag == 0:
		p.Reason = "no lag"
		return p
	case p.PerWorker == 0:
		p.Reason = fmt.Sprintf("no drain time left in the invocation (budget %s) or no rate: no fan-out", budget)
		return p
	}
	want := int(min(math.Ceil(float64(p.Lag)/float64(p.PerWorker)), float64(math.MaxInt32)))
	p.Workers = max(1, min(want, s.MaxWorkers, p.Behind))
	p.Reason = fmt.Sprintf("lag %d messages on %d partitions; one worker drains about %d in %s at %.0f/s (%s): %d wanted",
		p.Lag, p.Behind, p.PerWorker, budget.Round(time.Second), s.Rate, p.RateSource, want)
	switch {
	case p.Workers < want && p.Workers == s.MaxWorkers:
		p.Reason += fmt.Sprintf(", capped at max_workers %d", s.MaxWorkers)
	case p.Workers < want:
		p.Reason += fmt.Sprintf(", capped at the %d partitions behind", p.Behind)
	}
	return p
}

// MinSample is the fewest messages a run must drain for its rate to count:
// a run that found little to do measures its set-up, not its throughput.
const MinSample = 10000

// Rate remembers the drain rate this process measured (a warm Lambda
// container keeps it between invocations), as an exponentially weighted
// average of busy runs.
type Rate struct {
	mu sync.Mutex
	v  float64
	ok bool
}

// Observe records one run: messages drained in d. busy says the run had
// more to do than it drained (it stopped at its deadline); otherwise the
// run counts only when it drained at least MinSample messages.
func (r *Rate) Observe(messages uint64, d time.Duration, busy bool) {
	if d < time.Second || messages == 0 || (!busy && messages < MinSample) {
		return
	}
	v := float64(messages) / d.Seconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ok {
		r.v, r.ok = v, true
		return
	}
	r.v = 0.5*r.v + 0.5*v
}

// Get returns the measured rate, or def (and false) before any was measured.
func (r *Rate) Get(def float64) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ok {
		return def, false
	}
	return r.v, true
}

package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// Invoker starts one invocation of this function asynchronously.
type Invoker interface {
	Start(ctx context.Context, payload []byte) error
}

// TickOptions are a tick's or a worker's choices that are not
// configuration.
type TickOptions struct {
	// Invoker starts workers (a tick needs it when max_workers > 1).
	Invoker Invoker
	// Rate is the drain rate this process measured; nil measures nothing.
	Rate *Rate
	// ID names the cohort a tick starts (the Lambda request id).
	ID string
	// Metrics writes the tick's fan-out line; nil writes none.
	Metrics interface{ WriteFanOut(metrics.FanOut) }
}

// Report is what fan-out did in one invocation, next to its run's
// summary.
type Report struct {
	// Role is "coordinator" (a scheduled tick) or "worker".
	Role string `json:"role"`
	Plan *Plan  `json:"plan,omitempty"`
	// Cohort is the cohort's id; Workers its size, the coordinator included.
	Cohort  string `json:"cohort,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// Started counts the worker invocations started; StartErrors says why
	// the others were not.
	Started     int      `json:"workers_started,omitempty"`
	StartErrors []string `json:"start_errors,omitempty"`
	// Gathered is how many members (the anchor excluded) had joined when the
	// anchor left, and GatherMS how long that took.
	Gathered int       `json:"gathered,omitempty"`
	GatherMS int64     `json:"gather_ms,omitempty"`
	Settled  []Settled `json:"settled,omitempty"`
	// Skipped says why this invocation drained nothing.
	Skipped string `json:"skipped,omitempty"`
}

// Result is a drain invocation's result: the run's summary (its fields at
// the top level, as before fan-out existed) and what fan-out did, if on.
type Result struct {
	*drain.Summary
	FanOut *Report `json:"fan_out,omitempty"`
}

// settleGrace is how long after the anchor's deadline a member still waits
// for it: the anchor leaves at NotAfter at the latest, plus a round trip.
const settleGrace = 2 * time.Second

// surveyTimeout bounds the survey of the groups' lag: a stalled server
// must not hang a tick.
const surveyTimeout = time.Minute

// Member is the sink as a cohort sees it.
type Member interface {
	// Run drains once, alone.
	Run(ctx context.Context) (*drain.Summary, error)
	// RunMember drains once as a member of settler's cohort.
	RunMember(ctx context.Context, settler *Settler) (*drain.Summary, error)
}

// Settings are the configuration's fan-out settings.
type Settings struct {
	MaxWorkers     int           // max_workers: the largest cohort (1 = none)
	WorkerRate     int           // worker_rate: messages/s a worker drains, until one is measured
	SettleTimeout  time.Duration // settle_timeout: the longest wait for the members to join
	DeadlineMargin time.Duration // deadline_margin: kept back from the invocation's deadline
}

// Coordinator runs a Lambda invocation of a sink with fan-out: a scheduled
// tick (Tick) or a worker a tick started (Work).
type Coordinator struct {
	Sink     Member
	Settings Settings
	// Streams are the configured streams, whose groups the survey reads
	// and the anchor holds.
	Streams []drain.Stream
	// Open opens an Iggy connection of the coordinator's own.
	Open func(ctx context.Context) (*source.Conn, error)
	Log  *slog.Logger
}

// Tick is a scheduled invocation. With max_workers 1 it is one drain run,
// exactly as before fan-out. Otherwise it measures the lag, sizes a cohort
// (Decide) and, when one worker is not enough, anchors the consumer
// groups, starts the other workers and drains as the cohort's first member.
// A group that already has members (a cohort still draining) is left alone:
// the tick drains nothing.
func (c *Coordinator) Tick(ctx context.Context, o TickOptions) (*Result, error) {
	pc := &c.Settings
	if pc.MaxWorkers <= 1 {
		sum, err := c.Sink.Run(ctx)
		o.observe(sum, 0)
		return &Result{Summary: sum}, err
	}
	rep := &Report{Role: "coordinator", Workers: 1}
	plan, busy, err := c.plan(ctx, o)
	switch {
	case err != nil:
		c.Log.Warn("could not measure the lag for fan-out; draining alone", "error", err.Error())
	case busy != "":
		// Joining would take a partition from a member still draining, and
		// leaving would deal them all again: leave the cohort alone.
		rep.Plan = &plan
		rep.Skipped = "a cohort is still draining (" + busy + "); this tick starts nothing and leaves the group alone"
		c.Log.Info(rep.Skipped)
		o.write(metrics.FanOut{})
		return &Result{Summary: &drain.Summary{Started: time.Now().UTC()}, FanOut: rep}, nil
	default:
		rep.Plan = &plan
		c.Log.Info("fan-out plan", "workers", plan.Workers, "lag", plan.Lag, "partitions_behind", plan.Behind, "reason", plan.Reason)
	}
	if err != nil || plan.Workers <= 1 {
		sum, err := c.Sink.Run(ctx)
		o.observe(sum, 0)
		o.write(metrics.FanOut{Workers: 1})
		return &Result{Summary: sum, FanOut: rep}, err
	}
	return c.coordinate(ctx, o, plan, rep)
}

// coordinate anchors the groups, starts plan.Workers-1 workers and drains
// as a member of the cohort.
func (c *Coordinator) coordinate(ctx context.Context, o TickOptions, plan Plan, rep *Report) (*Result, error) {
	began := time.Now()
	anchor, err := c.hold(ctx)
	if errors.Is(err, ErrBusy) {
		rep.Skipped = "a cohort is still draining (" + err.Error() + "); this tick starts nothing and leaves the group alone"
		c.Log.Info(rep.Skipped)
		o.write(metrics.FanOut{})
		return &Result{Summary: &drain.Summary{Started: began.UTC()}, FanOut: rep}, nil
	}
	if err != nil {
		return &Result{Summary: &drain.Summary{Started: began.UTC()}, FanOut: rep}, fmt.Errorf("fan-out: anchor the consumer groups: %w", err)
	}
	settle := c.Settings.SettleTimeout
	cohort := &Cohort{ID: o.ID, Workers: plan.Workers, Anchors: anchor.Anchors(),
		NotAfter: began.Add(settle), SettleBy: began.Add(settle + settleGrace)}
	rep.Cohort = cohort.ID
	rep.Started, rep.StartErrors = c.startWorkers(ctx, o.Invoker, cohort, plan.Workers-1)
	rep.Workers = 1 + rep.Started
	type gathered struct {
		n   int
		err error
		at  time.Time
	}
	released := make(chan gathered, 1)
	go func() {
		n, err := anchor.Release(ctx, rep.Workers, cohort.NotAfter)
		released <- gathered{n, err, time.Now()}
	}()
	settler := &Settler{Cohort: cohort, Log: c.Log}
	sum, runErr := c.Sink.RunMember(ctx, settler)
	g := <-released
	if g.err != nil {
		c.Log.Warn("the cohort's anchor could not leave cleanly; the server drops it when its connection closes", "error", g.err.Error())
	}
	rep.Gathered, rep.GatherMS, rep.Settled = g.n, g.at.Sub(began).Milliseconds(), settler.Results()
	if g.n < rep.Workers {
		c.Log.Warn("fewer members joined than were started before settle_timeout; the others drain nothing this time "+
			"(is ReservedConcurrency at least MaxWorkers? are cold starts slower than settle_timeout?)",
			"joined", g.n, "members", rep.Workers, "settle_timeout", c.Settings.SettleTimeout)
	}
	o.observe(sum, waited(rep.Settled))
	o.write(metrics.FanOut{Workers: rep.Workers, Started: rep.Started, Settle: g.at.Sub(began)})
	return &Result{Summary: sum, FanOut: rep}, runErr
}

// Work is a worker invocation: one drain run as a member of cohort, unless
// it starts too late to take part.
func (c *Coordinator) Work(ctx context.Context, cohort *Cohort, o TickOptions) (*Result, error) {
	if late := LateWorker(cohort, time.Now()); late != nil {
		c.Log.Info(late.FanOut.Skipped, "cohort", cohort.ID)
		return late, nil
	}
	rep := &Report{Role: "worker", Cohort: cohort.ID, Workers: cohort.Workers}
	settler := &Settler{Cohort: cohort, Log: c.Log}
	sum, err := c.Sink.RunMember(ctx, settler)
	rep.Settled = settler.Results()
	o.observe(sum, waited(rep.Settled))
	return &Result{Summary: sum, FanOut: rep}, err
}

// LateWorker is the result of a worker that starts after its cohort's
// not_after (a delayed or retried event), which must not take part; nil
// when it is in time.
func LateWorker(cohort *Cohort, now time.Time) *Result {
	if !now.After(cohort.NotAfter) {
		return nil
	}
	return &Result{Summary: &drain.Summary{Started: now.UTC()}, FanOut: &Report{
		Role: "worker", Cohort: cohort.ID, Workers: cohort.Workers,
		Skipped: fmt.Sprintf("started %s after the cohort's not_after (a delayed or retried event): too late to take part",
			now.Sub(cohort.NotAfter).Round(time.Millisecond)),
	}}
}

func (c *Coordinator) plan(ctx context.Context, o TickOptions) (p Plan, busy string, err error) {
	lags, busy, err := c.survey(ctx)
	if err != nil {
		return p, "", err
	}
	pc := &c.Settings
	sz := Sizing{MaxWorkers: pc.MaxWorkers, Rate: float64(pc.WorkerRate)}
	if o.Rate != nil {
		sz.Rate, sz.Measured = o.Rate.Get(sz.Rate)
	}
	if dl, ok := ctx.Deadline(); ok {
		sz.Budget = time.Until(dl) - pc.SettleTimeout - pc.DeadlineMargin
	} else {
		sz.Budget = 15 * time.Minute // no deadline: Lambda's longest
	}
	return Decide(lags, sz), busy, nil
}

// survey reads, on a connection of its own and without joining, every
// configured partition's lag and whether any consumer group has members.
func (c *Coordinator) survey(ctx context.Context) (lags []Lag, busy string, err error) {
	ctx, cancel := context.WithTimeout(ctx, surveyTimeout)
	defer cancel()
	conn, err := c.Open(ctx)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	for _, st := range c.Streams {
		for _, name := range st.Topics {
			t, err := conn.Topic(ctx, st.Name, name, st.Group)
			if err != nil {
				return nil, "", err
			}
			members, err := conn.GroupMembers(ctx, t)
			if err != nil {
				return nil, "", err
			}
			if len(members) > 0 && busy == "" {
				busy = fmt.Sprintf("%s/%s group %q has %d members", t.Stream, t.Topic, t.Group, len(members))
			}
			offsets, err := conn.Offsets(ctx, t)
			if err != nil {
				return nil, "", err
			}
			for _, p := range offsets {
				lags = append(lags, Lag{Stream: t.Stream, Topic: t.Topic, Partition: p.Partition, Messages: p.Lag()})
			}
		}
	}
	return lags, busy, nil
}

// hold anchors every configured consumer group on a connection of its own.
func (c *Coordinator) hold(ctx context.Context) (*Anchor, error) {
	conn, err := c.Open(ctx)
	if err != nil {
		return nil, err
	}
	return Hold(ctx, conn, c.Streams)
}

// startWorkers starts n workers of cohort at once; it returns how many
// started and why the others did not.
func (c *Coordinator) startWorkers(ctx context.Context, inv Invoker, cohort *Cohort, n int) (int, []string) {
	if inv == nil {
		return 0, []string{"no invoker: this process cannot start workers"}
	}
	payload, err := json.Marshal(Request{Mode: ModeWorker, Cohort: cohort})
	if err != nil {
		return 0, []string{err.Error()}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	started, errs := 0, []string{}
	for range n {
		wg.Go(func() {
			err := inv.Start(ctx, payload)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			started++
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		c.Log.Error("some workers could not be started; the cohort drains with fewer", "started", started, "wanted", n, "errors", errs)
	} else {
		c.Log.Info("workers started", "cohort", cohort.ID, "workers", started)
	}
	return started, errs
}

// observe feeds a run to the rate estimate, without the time spent waiting
// for the cohort to settle.
func (o TickOptions) observe(sum *drain.Summary, settle time.Duration) {
	if o.Rate == nil || sum == nil {
		return
	}
	d := time.Duration(sum.DurationMS)*time.Millisecond - settle
	o.Rate.Observe(sum.Messages, d, sum.Stopped == "deadline")
}

func (o TickOptions) write(f metrics.FanOut) {
	if o.Metrics == nil {
		return
	}
	o.Metrics.WriteFanOut(f)
}

func waited(settled []Settled) time.Duration {
	var d time.Duration
	for _, r := range settled {
		d += time.Duration(r.WaitMS) * time.Millisecond
	}
	return d
}

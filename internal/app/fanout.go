package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// Invoker starts one invocation of this function asynchronously.
type Invoker interface {
	Start(ctx context.Context, payload []byte) error
}

// FanOutOptions are a tick's or a worker's choices that are not
// configuration.
type FanOutOptions struct {
	// Invoker starts workers (a tick needs it when max_workers > 1).
	Invoker Invoker
	// Rate is the drain rate this process measured; nil measures nothing.
	Rate *fanout.Rate
	// ID names the cohort a tick starts (the Lambda request id).
	ID string
	// Metrics writes the tick's fan-out line; nil writes none.
	Metrics *metrics.EMF
}

// FanOutReport is what fan-out did in one invocation, next to its run's
// summary.
type FanOutReport struct {
	// Role is "coordinator" (a scheduled tick) or "worker".
	Role string       `json:"role"`
	Plan *fanout.Plan `json:"plan,omitempty"`
	// Cohort is the cohort's id; Workers its size, the coordinator included.
	Cohort  string `json:"cohort,omitempty"`
	Workers int    `json:"workers,omitempty"`
	// Started counts the worker invocations started; StartErrors says why
	// the others were not.
	Started     int      `json:"workers_started,omitempty"`
	StartErrors []string `json:"start_errors,omitempty"`
	// Gathered is how many members (the anchor excluded) had joined when the
	// anchor left, and GatherMS how long that took.
	Gathered int              `json:"gathered,omitempty"`
	GatherMS int64            `json:"gather_ms,omitempty"`
	Settled  []fanout.Settled `json:"settled,omitempty"`
	// Skipped says why this invocation drained nothing.
	Skipped string `json:"skipped,omitempty"`
}

// Result is a drain invocation's result: the run's summary (its fields at
// the top level, as before fan-out existed) and what fan-out did, if on.
type Result struct {
	*drain.Summary
	FanOut *FanOutReport `json:"fan_out,omitempty"`
}

// settleGrace is how long after the anchor's deadline a member still waits
// for it: the anchor leaves at NotAfter at the latest, plus a round trip.
const settleGrace = 2 * time.Second

// Tick is a scheduled invocation. With max_workers 1 it is one drain run,
// exactly as before fan-out. Otherwise it measures the lag, sizes a cohort
// (fanout.Decide) and, when one worker is not enough, anchors the consumer
// groups, starts the other workers and drains as the cohort's first member.
// A group that already has members (a cohort still draining) is left alone:
// the tick drains nothing.
func (s *Sink) Tick(ctx context.Context, o FanOutOptions) (*Result, error) {
	pc := &s.Config.Plugin
	if pc.MaxWorkers <= 1 {
		sum, err := s.Run(ctx)
		o.observe(sum, 0)
		return &Result{Summary: sum}, err
	}
	rep := &FanOutReport{Role: "coordinator", Workers: 1}
	plan, busy, err := s.plan(ctx, o)
	switch {
	case err != nil:
		s.log.Warn("could not measure the lag for fan-out; draining alone", "error", err.Error())
	case busy != "":
		// Joining would take a partition from a member still draining, and
		// leaving would deal them all again: leave the cohort alone.
		rep.Plan = &plan
		rep.Skipped = "a cohort is still draining (" + busy + "); this tick starts nothing and leaves the group alone"
		s.log.Info(rep.Skipped)
		o.write(metrics.FanOut{})
		return &Result{Summary: &drain.Summary{Started: time.Now().UTC()}, FanOut: rep}, nil
	default:
		rep.Plan = &plan
		s.log.Info("fan-out plan", "workers", plan.Workers, "lag", plan.Lag, "partitions_behind", plan.Behind, "reason", plan.Reason)
	}
	if err != nil || plan.Workers <= 1 {
		sum, err := s.Run(ctx)
		o.observe(sum, 0)
		o.write(metrics.FanOut{Workers: 1})
		return &Result{Summary: sum, FanOut: rep}, err
	}
	return s.coordinate(ctx, o, plan, rep)
}

// coordinate anchors the groups, starts plan.Workers-1 workers and drains
// as a member of the cohort.
func (s *Sink) coordinate(ctx context.Context, o FanOutOptions, plan fanout.Plan, rep *FanOutReport) (*Result, error) {
	began := time.Now()
	anchor, err := s.hold(ctx)
	if errors.Is(err, fanout.ErrBusy) {
		rep.Skipped = "a cohort is still draining (" + err.Error() + "); this tick starts nothing and leaves the group alone"
		s.log.Info(rep.Skipped)
		o.write(metrics.FanOut{})
		return &Result{Summary: &drain.Summary{Started: began.UTC()}, FanOut: rep}, nil
	}
	if err != nil {
		return &Result{Summary: &drain.Summary{Started: began.UTC()}, FanOut: rep}, fmt.Errorf("fan-out: anchor the consumer groups: %w", err)
	}
	settle := s.Config.Plugin.SettleTimeout
	cohort := &fanout.Cohort{ID: o.ID, Workers: plan.Workers, Anchors: anchor.Anchors(),
		NotAfter: began.Add(settle), SettleBy: began.Add(settle + settleGrace)}
	rep.Cohort = cohort.ID
	rep.Started, rep.StartErrors = s.startWorkers(ctx, o.Invoker, cohort, plan.Workers-1)
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
	settler := &fanout.Settler{Cohort: cohort, Log: s.log}
	sum, runErr := s.RunMember(ctx, settler)
	g := <-released
	if g.err != nil {
		s.log.Warn("the cohort's anchor could not leave cleanly; the server drops it when its connection closes", "error", g.err.Error())
	}
	rep.Gathered, rep.GatherMS, rep.Settled = g.n, g.at.Sub(began).Milliseconds(), settler.Results()
	if g.n < rep.Workers {
		s.log.Warn("fewer members joined than were started before settle_timeout; the others drain nothing this time "+
			"(is ReservedConcurrency at least MaxWorkers? are cold starts slower than settle_timeout?)",
			"joined", g.n, "members", rep.Workers, "settle_timeout", s.Config.Plugin.SettleTimeout)
	}
	o.observe(sum, waited(rep.Settled))
	o.write(metrics.FanOut{Workers: rep.Workers, Started: rep.Started, Settle: g.at.Sub(began)})
	return &Result{Summary: sum, FanOut: rep}, runErr
}

// Work is a worker invocation: one drain run as a member of cohort, unless
// it starts too late to take part.
func (s *Sink) Work(ctx context.Context, cohort *fanout.Cohort, o FanOutOptions) (*Result, error) {
	if late := LateWorker(cohort, time.Now()); late != nil {
		s.log.Info(late.FanOut.Skipped, "cohort", cohort.ID)
		return late, nil
	}
	rep := &FanOutReport{Role: "worker", Cohort: cohort.ID, Workers: cohort.Workers}
	settler := &fanout.Settler{Cohort: cohort, Log: s.log}
	sum, err := s.RunMember(ctx, settler)
	rep.Settled = settler.Results()
	o.observe(sum, waited(rep.Settled))
	return &Result{Summary: sum, FanOut: rep}, err
}

// LateWorker is the result of a worker that starts after its cohort's
// not_after (a delayed or retried event), which must not take part; nil
// when it is in time.
func LateWorker(cohort *fanout.Cohort, now time.Time) *Result {
	if !now.After(cohort.NotAfter) {
		return nil
	}
	return &Result{Summary: &drain.Summary{Started: now.UTC()}, FanOut: &FanOutReport{
		Role: "worker", Cohort: cohort.ID, Workers: cohort.Workers,
		Skipped: fmt.Sprintf("started %s after the cohort's not_after (a delayed or retried event): too late to take part",
			now.Sub(cohort.NotAfter).Round(time.Millisecond)),
	}}
}

// RunMember drains once as a cohort member: the run's connection joins
// the consumer groups through settler (see fanout.Settler).
func (s *Sink) RunMember(ctx context.Context, settler *fanout.Settler) (*drain.Summary, error) {
	r := s.Runner()
	settler.Owner = r.Owner
	if lr, ok := s.State.(fanout.LeaseReader); ok {
		settler.Leases = lr
	}
	dial := r.Dial
	r.Dial = func(ctx context.Context) (drain.Conn, error) {
		c, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		return settler.Wrap(c), nil
	}
	ctx, cancel := withRunTimeout(ctx, &s.Config.Plugin)
	defer cancel()
	return s.runAndRegister(ctx, r)
}

// plan measures every partition's lag and sizes the cohort; busy names a
// consumer group that already has members (a cohort still draining).
func (s *Sink) plan(ctx context.Context, o FanOutOptions) (p fanout.Plan, busy string, err error) {
	lags, busy, err := s.survey(ctx)
	if err != nil {
		return p, "", err
	}
	pc := &s.Config.Plugin
	sz := fanout.Sizing{MaxWorkers: pc.MaxWorkers, Rate: float64(pc.WorkerRate)}
	if o.Rate != nil {
		sz.Rate, sz.Measured = o.Rate.Get(sz.Rate)
	}
	if dl, ok := ctx.Deadline(); ok {
		sz.Budget = time.Until(dl) - pc.SettleTimeout - pc.DeadlineMargin
	} else {
		sz.Budget = 15 * time.Minute // no deadline: Lambda's longest
	}
	return fanout.Decide(lags, sz), busy, nil
}

// survey reads, on a connection of its own and without joining, every
// configured partition's lag and whether any consumer group has members.
func (s *Sink) survey(ctx context.Context) (lags []fanout.Lag, busy string, err error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	conn, err := source.Open(ctx, s.iggy)
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	for _, st := range s.Config.Streams {
		for _, name := range st.Topics {
			t, err := conn.Topic(ctx, st.Stream, name, st.ConsumerGroup)
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
			for _, p := range t.Partitions {
				ps := PartitionStatus{Messages: p.MessagesCount}
				if p.MessagesCount > 0 {
					cur := p.CurrentOffset
					ps.Current = &cur
				}
				off, ok, err := conn.StoredOffset(ctx, t, p.ID)
				if err != nil {
					return nil, "", err
				}
				if ok {
					ps.Committed = &off
				}
				lags = append(lags, fanout.Lag{Stream: t.Stream, Topic: t.Topic, Partition: p.ID, Messages: statusLag(ps)})
			}
		}
	}
	return lags, busy, nil
}

// hold anchors every configured consumer group on a connection of its own.
func (s *Sink) hold(ctx context.Context) (*fanout.Anchor, error) {
	conn, err := source.Open(ctx, s.iggy)
	if err != nil {
		return nil, err
	}
	return fanout.Hold(ctx, conn, s.drainOpts.Streams)
}

// startWorkers starts n workers of cohort at once; it returns how many
// started and why the others did not.
func (s *Sink) startWorkers(ctx context.Context, inv Invoker, cohort *fanout.Cohort, n int) (int, []string) {
	if inv == nil {
		return 0, []string{"no invoker: this process cannot start workers"}
	}
	payload, err := json.Marshal(fanout.Request{Mode: fanout.ModeWorker, Cohort: cohort})
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
		s.log.Error("some workers could not be started; the cohort drains with fewer", "started", started, "wanted", n, "errors", errs)
	} else {
		s.log.Info("workers started", "cohort", cohort.ID, "workers", started)
	}
	return started, errs
}

// observe feeds a run to the rate estimate, without the time spent waiting
// for the cohort to settle.
func (o FanOutOptions) observe(sum *drain.Summary, settle time.Duration) {
	if o.Rate == nil || sum == nil {
		return
	}
	d := time.Duration(sum.DurationMS)*time.Millisecond - settle
	o.Rate.Observe(sum.Messages, d, sum.Stopped == "deadline")
}

func (o FanOutOptions) write(f metrics.FanOut) {
	if o.Metrics == nil {
		return
	}
	f.Function = o.Metrics.Function
	o.Metrics.WriteFanOut(f)
}

func waited(settled []fanout.Settled) time.Duration {
	var d time.Duration
	for _, r := range settled {
		d += time.Duration(r.WaitMS) * time.Millisecond
	}
	return d
}

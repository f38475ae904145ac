package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// Handle is the function's entry point. The payload says what to do (see
// fanout.Parse): the scheduled event (or any other payload) is a tick,
// {"mode":"worker",...} a worker a tick started, {"mode":"audit"} the
// scheduled audit.
func (h *handler) Handle(ctx context.Context, payload json.RawMessage) (any, error) {
	req, err := fanout.Parse(payload)
	if err != nil {
		h.log.Error("invocation refused", "error", err.Error())
		return nil, err
	}
	switch req.Mode {
	case fanout.ModeAudit:
		return h.audit(ctx)
	case fanout.ModeReplay:
		return h.replay(ctx, req.Replay)
	case fanout.ModeWorker:
		// Too late to take part: end before any set-up or connection.
		if late := fanout.LateWorker(req.Cohort, time.Now()); late != nil {
			h.log.Info(late.FanOut.Skipped, "cohort", req.Cohort.ID)
			return late, nil
		}
		return h.drain(ctx, func(ctx context.Context, s *app.Sink) (*fanout.Result, error) {
			return s.Coordinator().Work(ctx, req.Cohort, h.fanOutOptions(ctx, s))
		})
	}
	return h.drain(ctx, func(ctx context.Context, s *app.Sink) (*fanout.Result, error) {
		return s.Coordinator().Tick(ctx, h.fanOutOptions(ctx, s))
	})
}

// fanOutOptions are the tick's and workers' process-level choices: the
// rate this container measured, an invoker of this very function, the
// request id as the cohort's name.
func (h *handler) fanOutOptions(ctx context.Context, s *app.Sink) fanout.TickOptions {
	o := fanout.TickOptions{Rate: &h.rate, ID: requestID(ctx),
		Metrics: &metrics.EMF{W: h.metrics, Namespace: s.Config.Plugin.MetricsNamespace, Function: h.function, Logger: h.log}}
	if s.Config.Plugin.MaxWorkers > 1 {
		inv, err := h.invoker(ctx)
		if err != nil {
			h.log.Error("fan-out: cannot start workers", "error", err.Error())
		} else {
			o.Invoker = inv
		}
	}
	return o
}

// invoker builds the Lambda client once per container.
func (h *handler) invoker(ctx context.Context) (fanout.Invoker, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inv == nil {
		inv, err := fanout.NewLambdaInvoker(ctx, h.function)
		if err != nil {
			return nil, err
		}
		h.inv = inv
	}
	return h.inv, nil
}

// drain runs one drain invocation: set-up, the start-up check, the run
// (run), its summary and pending lines. A disabled sink drains nothing.
func (h *handler) drain(ctx context.Context, run func(context.Context, *app.Sink) (*fanout.Result, error)) (any, error) {
	started := time.Now()
	s, runCtx, cancel, err := h.prepare(ctx, started)
	if err != nil || s == nil {
		if err == nil {
			return &drain.Summary{Started: started.UTC()}, nil
		}
		return nil, err
	}
	defer cancel()
	res, err := run(runCtx, s)
	if res == nil {
		res = &fanout.Result{}
	}
	if res.Summary != nil && res.Summary.Partitions != nil {
		ops.LogRun(h.log, res.Summary, err, false)
		ops.LogPending(h.log, s.Config, res.Summary, time.Now())
	} else if err != nil {
		h.log.Error("run failed", "error", err.Error())
	}
	if res.FanOut == nil {
		return res.Summary, err // exactly the result before fan-out existed
	}
	return res, err
}

// replayResult is a replay invocation's result: the summary; not done
// means invoke again with the same payload to go on.
type replayResult struct {
	Mode string `json:"mode"`
	*ops.ReplaySummary
}

// replayMargin is kept back from the run's end for the chunk in flight
// when the replay stops starting new ones.
const replayMargin = 10 * time.Second

// replay runs a replay for as long as the invocation has: it stops
// starting chunks replayMargin before the run's end, and the next
// invocation with the same payload goes on where this one stopped.
func (h *handler) replay(ctx context.Context, payload json.RawMessage) (any, error) {
	var req ops.ReplayRequest
	if len(payload) > 0 {
		if err := json.Unmarshal(payload, &req); err != nil {
			err = fmt.Errorf(`invocation payload: mode "replay": "replay": %w`, err)
			h.log.Error("invocation refused", "error", err.Error())
			return nil, err
		}
	}
	o, err := req.Options()
	if err != nil {
		h.log.Error("invocation refused", "error", err.Error())
		return nil, err
	}
	s, runCtx, cancel, err := h.prepare(ctx, time.Now())
	if err != nil || s == nil {
		return nil, err
	}
	defer cancel()
	if dl, ok := runCtx.Deadline(); ok {
		o.StopBy = dl.Add(-replayMargin)
	}
	sum, err := ops.RunReplay(runCtx, s, o, h.log)
	if sum == nil {
		h.log.Error("replay failed", "error", err.Error())
		return nil, err
	}
	h.log.Info("replay invocation finished", "replayed", sum.Replayed, "done", sum.Done, "target", sum.Target)
	return &replayResult{Mode: "replay", ReplaySummary: sum}, err
}

// auditResult is an audit invocation's result.
type auditResult struct {
	Mode string `json:"mode"`
	audit.Verdict
}

// audit runs the scheduled audit: every partition's objects listed and
// checked against the group and the state; metrics AuditGaps and
// AuditOverlaps; the invocation fails (Errors) on any violation.
func (h *handler) audit(ctx context.Context) (any, error) {
	s, err := h.setup(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil {
		ops.Disabled(h.disabled, h.log)
		return &auditResult{Mode: "audit", Verdict: audit.Summarize(nil)}, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-cleanupMargin))
		defer cancel()
	}
	reports, err := ops.NewAuditor(s, h.log).Audit(ctx, ops.AuditOptions{})
	if err != nil {
		err = fmt.Errorf("audit: %w", err)
		h.log.Error("audit failed", "error", err.Error())
		return nil, err
	}
	tables, err := s.AuditTables(ctx, reports)
	if err != nil {
		err = fmt.Errorf("audit: %w", err)
		h.log.Error("audit failed", "error", err.Error())
		return nil, err
	}
	v := audit.Summarize(reports)
	v.Tables = tables
	emf := &metrics.EMF{W: h.metrics, Namespace: s.Config.Plugin.MetricsNamespace, Function: h.function, Logger: h.log}
	emf.WriteAudit(metrics.Audit{Partitions: v.Partitions, Objects: v.Objects, GapMarkers: v.GapMarkers, Gaps: v.Gaps, Overlaps: v.Overlaps})
	res := &auditResult{Mode: "audit", Verdict: v}
	if verr := ops.AuditVerdict(reports); verr != nil {
		h.log.Error("audit found violations", "overlaps", v.Overlaps, "unreported_gaps", v.Gaps, "reports", reports)
		return res, verr
	}
	if verr := ops.TablesVerdict(tables); verr != nil {
		v.OK, res.Verdict.OK = false, false
		h.log.Error("audit found table violations", "tables", tables)
		return res, verr
	}
	h.log.Info("audit passed", "partitions", v.Partitions, "objects", v.Objects, "gap_markers", v.GapMarkers)
	return res, nil
}

func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	return fmt.Sprintf("cohort-%d", time.Now().UnixNano())
}

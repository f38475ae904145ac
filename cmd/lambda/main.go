// Command lambda is the sink as an AWS Lambda function: every scheduled
// invocation is one drain run (see internal/drain).
package main

import (
	"context"
	"encoding/json"

	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/logging"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
)

// cleanupMargin is kept back from the invocation's deadline for releasing
// leases, leaving the group (drain.CleanupTimeout each) and writing metrics.
const cleanupMargin = 2*drain.CleanupTimeout + time.Second

func main() {
	logger := logging.New(os.Stderr, os.Getenv("AWS_LAMBDA_LOG_LEVEL"), os.Getenv("AWS_LAMBDA_LOG_FORMAT"))
	slog.SetDefault(logger)
	logging.CaptureStdlib(logger)
	h := &handler{log: logger, metrics: os.Stdout, env: os.LookupEnv, function: os.Getenv("AWS_LAMBDA_FUNCTION_NAME")}
	lambda.Start(h.Invoke)
}

// handler builds the sink once per container and runs it per invocation.
type handler struct {
	log      *slog.Logger
	metrics  io.Writer
	env      func(string) (string, bool)
	function string

	mu   sync.Mutex
	sink *app.Sink
	// timeout is the function's timeout, learnt at the first invocation.
	timeout time.Duration
}

// functionTimeout returns the function's timeout, learnt once.
func (h *handler) functionTimeout(remaining time.Duration) time.Duration {
	if h.timeout == 0 {
		h.timeout = app.FunctionTimeout(h.env, remaining)
	}
	return h.timeout
}

// setup loads the configuration and builds the AWS clients once; a failure
// is retried on the next invocation (it may be a passing fault).
func (h *handler) setup(ctx context.Context) (*app.Sink, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sink != nil {
		return h.sink, nil
	}
	cfg, err := config.FromEnv(h.env)
	if err != nil {
		return nil, err
	}
	if len(cfg.Ignored) > 0 {
		h.log.Info("ignoring upstream-runtime keys that mean nothing to this sink", "keys", cfg.Ignored)
	}
	h.log.Info("configuration", "config", cfg.String())
	if dl, ok := ctx.Deadline(); ok {
		if err := app.CheckTimeBudget(cfg, h.functionTimeout(time.Until(dl)), cleanupMargin); err != nil {
			return nil, err
		}
	}
	app.ApplyMemoryLimit(cfg, h.log)
	s, err := app.New(ctx, cfg, app.Options{Logger: h.log})
	if err != nil {
		return nil, err
	}
	h.sink = s
	return s, nil
}

// Invoke handles the EventBridge scheduled event; any other JSON payload
// (or none) triggers the same run.
func (h *handler) Invoke(ctx context.Context, _ json.RawMessage) (*drain.Summary, error) {
	started := time.Now()
	s, err := h.setup(ctx)
	if err != nil {
		h.log.Error("setup failed", "error", err.Error())
		h.emit("", started, nil, true)
		return nil, err
	}
	runCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, dl.Add(-cleanupMargin))
		defer cancel()
	}
	sum, err := s.Run(runCtx)
	sum.Log(h.log, err)
	h.emit(s.Config.Plugin.MetricsNamespace, started, sum, err != nil)
	if err != nil {
		return sum, err
	}
	return sum, nil
}

func (h *handler) emit(ns string, started time.Time, sum *drain.Summary, failed bool) {
	if ns == "" {
		ns = "IggyS3Sink" // configuration did not load
	}
	run := metrics.Run{Function: h.function, Duration: time.Since(started), Failed: failed}
	if sum != nil {
		for _, p := range sum.Partitions {
			run.Partitions = append(run.Partitions, metrics.Partition{
				Stream: p.Stream, Topic: p.Topic, Partition: p.Partition,
				Objects: p.Objects, Messages: p.Messages, Bytes: p.Bytes, Lag: p.Lag,
				GapMessages: gapMessages(p.Gaps), InvalidPayloads: p.InvalidPayloads, Retries: p.Retries,
			})
		}
	}
	if err := metrics.WriteEMF(h.metrics, ns, time.Now(), run); err != nil {
		h.log.Warn("writing metrics failed", "error", err.Error())
	}
}

func gapMessages(gaps []drain.Gap) uint64 {
	var n uint64
	for _, g := range gaps {
		n += g.Last - g.First + 1
	}
	return n
}

// Command lambda is the sink as an AWS Lambda function: every scheduled
// invocation is one drain run (see internal/drain).
package main

import (
	"context"
	"encoding/json"
	"fmt"
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
// leases, leaving the group (app.CleanupTimeout each) and writing metrics.
const cleanupMargin = 2*app.CleanupTimeout + time.Second

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

	mu       sync.Mutex
	sink     *app.Sink
	disabled *config.Config // the configuration, when it says enabled = false
}

// setup loads the configuration and builds the AWS clients once; a failure
// is retried on the next invocation (it may be a passing fault). A sink
// disabled by its configuration gets no clients: (nil, nil).
func (h *handler) setup(ctx context.Context) (*app.Sink, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sink != nil || h.disabled != nil {
		return h.sink, nil
	}
	ref, _ := h.env("SINK_CONFIG")
	root, _ := h.env("LAMBDA_TASK_ROOT")
	cfg, err := app.LoadConfig(ctx, ref, root, h.env)
	if err != nil {
		return nil, err
	}
	if len(cfg.Ignored) > 0 {
		h.log.Info("ignoring upstream-runtime keys that mean nothing to this sink", "keys", cfg.Ignored)
	}
	h.log.Info("configuration", "version", app.Version(), "config", cfg)
	h.log.Debug("full configuration", "config", cfg.String())
	if !cfg.Enabled {
		h.disabled = cfg
		return nil, nil
	}
	app.ApplyMemoryLimit(cfg, h.log)
	emf := &app.EMF{W: h.metrics, Namespace: cfg.Plugin.MetricsNamespace, Function: h.function, Logger: h.log}
	s, err := app.New(ctx, cfg, app.Options{Logger: h.log, Hooks: []drain.Hook{emf}})
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
		failed := &app.EMF{W: h.metrics, Function: h.function, Logger: h.log}
		failed.Write(metrics.Run{Function: h.function, Duration: time.Since(started), Failed: true})
		return nil, err
	}
	if s == nil {
		app.Disabled(h.disabled, h.log)
		return &drain.Summary{Started: started.UTC()}, nil
	}
	runCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, dl.Add(-cleanupMargin))
		defer cancel()
	}
	if err := s.Preflight(runCtx); err != nil {
		err = fmt.Errorf("start-up check failed: %w", err)
		h.log.Error("run failed", "error", err.Error())
		failed := &app.EMF{W: h.metrics, Namespace: s.Config.Plugin.MetricsNamespace, Function: h.function, Logger: h.log}
		failed.Write(metrics.Run{Function: h.function, Duration: time.Since(started), Failed: true})
		return nil, err
	}
	sum, err := s.Run(runCtx)
	app.LogRun(h.log, sum, err, false)
	app.LogPending(h.log, s.Config, sum, time.Now())
	return sum, err
}

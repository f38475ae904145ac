// Command lambda is the sink as an AWS Lambda function: every scheduled
// invocation is one drain run (see internal/drain).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/configsource"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fanout"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/handover"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable/sinktables"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/initgc"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/logging"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// cleanupMargin is kept back from the invocation's deadline for releasing
// leases, leaving the group (app.CleanupTimeout each) and writing metrics.
const cleanupMargin = 2*app.CleanupTimeout + time.Second

func main() {
	initgc.Done()
	logger := logging.New(os.Stderr, os.Getenv("AWS_LAMBDA_LOG_LEVEL"), os.Getenv("AWS_LAMBDA_LOG_FORMAT"))
	slog.SetDefault(logger)
	logging.CaptureStdlib(logger)
	h := &handler{log: logger, metrics: os.Stdout, env: os.LookupEnv, function: os.Getenv("AWS_LAMBDA_FUNCTION_NAME")}
	if !sinktables.HasIceberg {
		h.preload()
	}
	lambda.Start(h.Handle)
}

// preloadTimeout bounds reading the configuration before the first
// invocation (Lambda gives a function's start-up 10 s).
const preloadTimeout = 5 * time.Second

// preload is the lean bootstrap's start (a build without Iceberg): it
// reads the configuration before the first invocation, and keeps it when it
// needs no Iceberg. Otherwise, and whenever it cannot tell (the read
// failed), it hands over to the full build beside it, which reads it again
// and reports any error per invocation; without one, the first invocation
// reports the error, or ErrNoIceberg.
func (h *handler) preload() {
	ctx, cancel := context.WithTimeout(context.Background(), preloadTimeout)
	defer cancel()
	cfg, err := h.source().Load(ctx)
	if err == nil && !sinktables.Needs(cfg) {
		h.preloaded = cfg
		return
	}
	full, ferr := handover.Beside(sinktables.BuildSuffix)
	if ferr != nil {
		if err == nil {
			h.log.Error("the configuration needs Iceberg, which this build lacks", "error", ferr.Error())
		}
		return
	}
	reason := "table_format = iceberg"
	if err != nil {
		reason = "the configuration could not be read yet"
	}
	h.log.Info("handing over to the build with Iceberg", "path", full, "reason", reason)
	if err := handover.Exec(full); err != nil {
		h.log.Error("handover failed", "error", err.Error())
	}
}

// handler builds the sink once per container and runs it per invocation.
type handler struct {
	log      *slog.Logger
	metrics  io.Writer
	env      func(string) (string, bool)
	function string

	// preloaded is the configuration the lean bootstrap read at start.
	preloaded *config.Config

	mu sync.Mutex
	// src is where the configuration comes from (SINK_CONFIG): read once,
	// then again whenever a file in S3 or SSM changed.
	src      *configsource.Source
	sink     *app.Sink
	disabled *config.Config // the configuration, when it says enabled = false
	// timeout is the function's timeout, learnt at the first invocation.
	timeout time.Duration

	// rate is the drain rate this container measured (fan-out sizing);
	// inv starts workers, made at the first fan-out.
	rate fanout.Rate
	inv  fanout.Invoker
}

// functionTimeout returns the function's timeout, learnt once.
func (h *handler) functionTimeout(remaining time.Duration) time.Duration {
	if h.timeout == 0 {
		h.timeout = ops.FunctionTimeout(h.env, remaining)
	}
	return h.timeout
}

// source is the configuration's source, made at the first use.
func (h *handler) source() *configsource.Source {
	if h.src == nil {
		ref, _ := h.env("SINK_CONFIG")
		root, _ := h.env("LAMBDA_TASK_ROOT")
		h.src = configsource.New(ref, root, h.env)
	}
	return h.src
}

// setup loads the configuration and builds the AWS clients once per
// container; a failure is retried on the next invocation (it may be a
// passing fault). Every later invocation asks whether a configuration file
// in S3 or SSM changed (one request) and, when it did, builds the sink again
// from the new version; an edit that no longer loads fails the invocation.
// A sink disabled by its configuration gets no clients: (nil, nil).
func (h *handler) setup(ctx context.Context) (*app.Sink, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sink != nil || h.disabled != nil {
		cfg, err := h.source().Reload(ctx)
		if errors.Is(err, configsource.ErrUnchecked) {
			// A throttled or failed read says nothing of the file: go on with
			// the version this container has, and say so.
			h.log.Warn("running the configuration read before: its file could not be checked for changes", "file", h.source().Ref(), "error", err.Error())
			return h.sink, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the configuration file %s changed and cannot be used (the previous version is not run either): %w", h.source().Ref(), err)
		}
		if cfg == nil {
			return h.sink, nil
		}
		h.log.Info("the configuration file changed: this invocation runs the new version", "file", h.source().Ref())
		h.sink, h.disabled = nil, nil
		return h.build(ctx, cfg)
	}
	cfg := h.preloaded
	h.preloaded = nil // a failed setup reads it again
	if cfg == nil {
		var err error
		if cfg, err = h.source().Load(ctx); err != nil {
			return nil, err
		}
	}
	return h.build(ctx, cfg)
}

// build makes the sink of a configuration just loaded.
func (h *handler) build(ctx context.Context, cfg *config.Config) (*app.Sink, error) {
	if !sinktables.HasIceberg && sinktables.Needs(cfg) {
		// Read at start, this configuration needed no tables; it does now.
		// The handover must come before an invocation: end this container,
		// and the next start hands over.
		if full, err := handover.Beside(sinktables.BuildSuffix); err == nil {
			h.log.Error("the configuration now sets table_format = iceberg: exiting, so that the next start runs it in the build with Iceberg", "path", full)
			os.Exit(1)
		}
	}
	ops.LogLoaded(h.log, cfg)
	h.log.Info("configuration", "version", app.Version(), "config", cfg)
	h.log.Debug("full configuration", "config", cfg.String())
	if !cfg.Enabled {
		h.disabled = cfg
		return nil, nil
	}
	if v, ok := h.env(ops.StackGrantsVar); ok {
		grants, err := ops.ParseStackGrants(v)
		if err == nil {
			err = grants.Check(cfg)
		}
		if err != nil {
			return nil, err
		}
		for _, w := range grants.Warnings(cfg) {
			h.log.Warn(w)
		}
	}
	if dl, ok := ctx.Deadline(); ok {
		if err := ops.CheckTimeBudget(cfg, h.functionTimeout(time.Until(dl)), cleanupMargin); err != nil {
			return nil, err
		}
	}
	app.ApplyMemoryLimit(cfg, h.log)
	emf := &metrics.EMF{W: h.metrics, Namespace: cfg.Plugin.MetricsNamespace, Function: h.function, Logger: h.log}
	s, err := app.New(ctx, cfg, app.Options{Logger: h.log, Hooks: []drain.Hook{emf}})
	if err != nil {
		return nil, err
	}
	h.sink = s
	return s, nil
}

// prepare builds the sink (once per container), bounds the run by the
// invocation's deadline less the clean-up margin, and makes the start-up
// check. A disabled sink returns (nil, ...) and logs why.
func (h *handler) prepare(ctx context.Context, started time.Time) (*app.Sink, context.Context, context.CancelFunc, error) {
	s, err := h.setup(ctx)
	if err != nil {
		h.log.Error("setup failed", "error", err.Error())
		failed := &metrics.EMF{W: h.metrics, Function: h.function, Logger: h.log}
		failed.Write(metrics.Run{Function: h.function, Duration: time.Since(started), Failed: true})
		return nil, ctx, func() {}, err
	}
	if s == nil {
		ops.Disabled(h.disabled, h.log)
		return nil, ctx, func() {}, nil
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		runCtx, cancel = context.WithDeadline(ctx, dl.Add(-cleanupMargin))
	}
	if err := ops.NewChecker(s).Preflight(runCtx); err != nil {
		cancel()
		err = fmt.Errorf("start-up check failed: %w", err)
		h.log.Error("run failed", "error", err.Error())
		failed := &metrics.EMF{W: h.metrics, Namespace: s.Config.Plugin.MetricsNamespace, Function: h.function, Logger: h.log}
		failed.Write(metrics.Run{Function: h.function, Duration: time.Since(started), Failed: true})
		return nil, ctx, func() {}, err
	}
	return s, runCtx, cancel, nil
}

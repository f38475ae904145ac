// Command poller runs the sink outside Lambda: in a loop, once, as a
// self-contained demo, or as an audit of what the sink has written.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/logging"
)

const usage = `poller — drain Apache Iggy streams into S3 (the same run as the Lambda)

Usage:
  poller [flags] run      one drain run every poll_interval until SIGINT/SIGTERM
  poller [flags] once     one drain run; the exit status says whether it failed
  poller [flags] audit    check every partition's objects: contiguous, no overlap,
                          no unreported gap, up to the committed offset (exit 1 if not)
  poller demo             a self-contained demo: built-in Iggy broker, in-process S3
                          and state store; no configuration, no network

Configuration comes from the TOML file named by -config or SINK_CONFIG (the
upstream connector's format), overridden by environment variables
(SINK_*, IGGY_*; see the README's configuration table).

Flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("poller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "path of the TOML configuration file (default: $SINK_CONFIG)")
	logLevel := fs.String("log-level", envOr("LOG_LEVEL", "info"), "log level: debug, info, warn, error (env LOG_LEVEL)")
	interval := fs.Duration("interval", 0, "run: time between runs (default: the first stream's poll_interval, at least 1s)")
	emitMetrics := fs.Bool("metrics", os.Getenv("SINK_METRICS") == "emf", "write each run's CloudWatch EMF metric lines to stdout, as the Lambda does (env SINK_METRICS=emf)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	logger := logging.New(stderr, *logLevel, "json")
	slog.SetDefault(logger)
	logging.CaptureStdlib(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cmd := fs.Arg(0)
	if cmd == "demo" {
		if err := demo(ctx, stdout); err != nil {
			fmt.Fprintln(stderr, "demo:", err)
			return 1
		}
		return 0
	}
	if cmd != "run" && cmd != "once" && cmd != "audit" {
		fmt.Fprintf(stderr, "poller: unknown command %q (want run, once, audit or demo)\n", cmd)
		return 2
	}
	env := os.LookupEnv
	path := *configPath
	if path == "" {
		path, _ = os.LookupEnv("SINK_CONFIG")
	}
	cfg, err := config.Load(path, env)
	if err != nil {
		fmt.Fprintln(stderr, "poller:", err)
		return 2
	}
	if len(cfg.Ignored) > 0 {
		logger.Info("ignoring upstream-runtime keys that mean nothing to this sink", "keys", cfg.Ignored)
	}
	logger.Info("configuration", "config", cfg.String())
	app.ApplyMemoryLimit(cfg, logger)
	opts := app.Options{CreateTable: true, Logger: logger}
	if *emitMetrics && cmd != "audit" {
		opts.Hooks = append(opts.Hooks, &app.EMF{W: stdout, Namespace: cfg.Plugin.MetricsNamespace, Function: "poller", Logger: logger})
	}
	s, err := app.New(ctx, cfg, opts)
	if err != nil {
		fmt.Fprintln(stderr, "poller:", err)
		return 1
	}
	switch cmd {
	case "audit":
		err := s.WriteAudit(ctx, stdout)
		if err != nil {
			fmt.Fprintln(stderr, "poller audit:", err)
			return 1
		}
		return 0
	case "once":
		if err := once(ctx, s, logger); err != nil {
			return 1
		}
		return 0
	default:
		every := *interval
		if every <= 0 && len(cfg.Streams) > 0 {
			every = cfg.Streams[0].PollInterval
		}
		every = max(every, time.Second)
		for {
			sum, err := s.Run(ctx)
			sum.Log(logger, err)
			select {
			case <-ctx.Done():
				logger.Info("poller stopped on a signal", "leases_released", sum.LeasesReleased, "leases", sum.Leases,
					"groups_left", sum.GroupsLeft, "groups", sum.Groups)
				return 0
			case <-time.After(every):
			}
		}
	}
}

func once(ctx context.Context, s *app.Sink, logger *slog.Logger) error {
	sum, err := s.Run(ctx)
	sum.Log(logger, err)
	return err
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok && v != "" {
		return v
	}
	return def
}

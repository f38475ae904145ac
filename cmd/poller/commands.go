package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/configsource"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/handover"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable/sinktables"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// command is one invocation of the poller.
type command struct {
	opts   *options
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
}

// loadConfig loads -config (or SINK_CONFIG) and the environment; it logs
// the configuration's short form at info and the full list at debug.
func (c *command) loadConfig(ctx context.Context) (*config.Config, bool) {
	cfg, err := c.readConfig(ctx)
	if err != nil {
		fmt.Fprintln(c.stderr, "poller:", err)
		return nil, false
	}
	return cfg, true
}

// readConfig loads -config (or SINK_CONFIG) and the environment, and logs
// the upstream keys it ignores and the file values the environment replaced.
func (c *command) readConfig(ctx context.Context) (*config.Config, error) {
	path := c.opts.config
	if path == "" {
		path, _ = os.LookupEnv("SINK_CONFIG")
	}
	cfg, err := configsource.Load(ctx, path, "", os.LookupEnv)
	if err != nil {
		return nil, err
	}
	ops.LogLoaded(c.log, cfg)
	return cfg, nil
}

// stoppedAtStart says whether once or run was stopped by a signal during
// its start-up (ctx is the signal's own, which has no deadline: a check's
// timeout inside it is still a failure), and logs the stop. A stop is no
// failure, wherever it lands.
func (c *command) stoppedAtStart(ctx context.Context, cmd, during string) bool {
	if (cmd != "once" && cmd != "run") || ctx.Err() == nil {
		return false
	}
	c.log.Info("poller stopped on a signal", "during", during, "stopped", "signal")
	return true
}

// handOver runs a configuration with tables in poller-iceberg beside a lean
// build (-tags noiceberg); it returns only when there is none.
func (c *command) handOver() {
	full, err := handover.Beside(sinktables.BuildSuffix)
	if err == nil {
		c.log.Info("handing over to the build with Iceberg", "path", full, "reason", "table_format = iceberg")
		err = handover.Exec(full)
	}
	fmt.Fprintf(c.stderr, "poller: table_format = \"iceberg\": this poller was built without Iceberg (-tags noiceberg): build it without the tag, or put that build beside it as poller%s (%v)\n", sinktables.BuildSuffix, err)
}

// sink runs the commands that need a configured sink: once, run, check,
// audit, status.
func (c *command) sink(ctx context.Context, cmd string) int {
	var replayOpts ops.ReplayOptions
	if cmd == "replay" {
		var err error
		if replayOpts, err = c.replayOptions(); err != nil {
			fmt.Fprintln(c.stderr, "poller replay:", err)
			return 2
		}
	}
	cfg, err := c.readConfig(ctx)
	if err != nil {
		if c.stoppedAtStart(ctx, cmd, "loading the configuration") {
			return 0
		}
		fmt.Fprintln(c.stderr, "poller:", err)
		return 2
	}
	if !sinktables.HasIceberg && sinktables.Needs(cfg) {
		c.handOver()
		return 2
	}
	c.log.Info("configuration", "version", app.Version(), "config", cfg)
	c.log.Debug("full configuration", "config", cfg.String())
	readOnly := cmd == "audit" || cmd == "check" || cmd == "status"
	if !readOnly && cmd != "replay" && ops.Disabled(cfg, c.log) {
		return 0
	}
	app.ApplyMemoryLimit(cfg, c.log)
	// A missing state table: created at a local endpoint, on AWS only with
	// -create-table; check names the tables of similar names too.
	opts := app.Options{CreateTable: c.opts.createTable, PollerTables: true, ReadOnly: readOnly, Logger: c.log}
	if c.opts.metrics && !readOnly {
		opts.Hooks = append(opts.Hooks, &metrics.EMF{W: c.stdout, Namespace: cfg.Plugin.MetricsNamespace, Function: "poller", Logger: c.log})
	}
	if cmd == "check" {
		// First, so that it is there when the set-up below fails.
		if err := ops.WriteEffective(c.stdout, cfg); err != nil {
			return c.fail(err, "check")
		}
		fmt.Fprintln(c.stdout)
	}
	s, err := app.New(ctx, cfg, opts)
	if err != nil {
		if c.stoppedAtStart(ctx, cmd, "setting up the sink") {
			return 0
		}
		fmt.Fprintln(c.stderr, "poller:", err)
		return 1
	}
	switch cmd {
	case "check":
		return c.fail(ops.NewChecker(s).Write(ctx, c.stdout), "check")
	case "audit":
		progress := newAuditProgress(c.stderr, time.Now, auditProgressEvery)
		return c.fail(ops.NewAuditor(s, c.log).Write(ctx, c.stdout, ops.AuditOptions{JSON: c.opts.json, Progress: progress.report}), "audit")
	case "status":
		return c.fail(ops.WriteStatus(ctx, c.stdout, s), "status")
	case "replay":
		replayOpts.Progress = c.stderr
		return c.fail(ops.Replay(ctx, s, c.stdout, replayOpts, c.log), "replay")
	}
	if err := ops.NewChecker(s).Preflight(ctx); err != nil {
		if c.stoppedAtStart(ctx, cmd, "the start-up checks") {
			return 0
		}
		fmt.Fprintln(c.stderr, "poller: start-up check failed:", err)
		return 1
	}
	if cmd == "once" {
		sum, err := s.Run(ctx)
		ops.LogRun(c.log, sum, err, false)
		ops.LogPending(c.log, cfg, sum, time.Now())
		return c.fail(err, "")
	}
	return c.loop(ctx, s, cfg)
}

// loop is `poller run`: a run every interval until a signal. Idle runs and
// unchanged pending counts are logged at debug, so a quiet topic does not
// fill the log.
func (c *command) loop(ctx context.Context, s *app.Sink, cfg *config.Config) int {
	every := c.opts.interval
	if every <= 0 && len(cfg.Streams) > 0 {
		every = cfg.Streams[0].PollInterval
	}
	every = max(every, time.Second)
	pend := pendingLog{last: map[string]uint64{}}
	for {
		sum, err := s.Run(ctx)
		ops.LogRun(c.log, sum, err, true)
		pend.log(c.log, cfg, sum)
		select {
		case <-ctx.Done():
			c.log.Info("poller stopped on a signal", "leases_released", sum.LeasesReleased, "leases", sum.Leases,
				"groups_left", sum.GroupsLeft, "groups", sum.Groups)
			return 0
		case <-time.After(every):
		}
	}
}

// pendingLog logs a partition's pending explanation at info when its
// pending count changes, else at debug.
type pendingLog struct{ last map[string]uint64 }

func (p *pendingLog) log(log *slog.Logger, cfg *config.Config, sum *drain.Summary) {
	if sum == nil {
		return
	}
	now := time.Now()
	for _, ps := range sum.Partitions {
		key := fmt.Sprintf("%s/%s/%d", ps.Stream, ps.Topic, ps.Partition)
		msg := ops.PendingExplanation(ps, cfg, now)
		level := slog.LevelInfo
		if p.last[key] == ps.Pending {
			level = slog.LevelDebug
		}
		p.last[key] = ps.Pending
		if msg != "" {
			log.Log(context.Background(), level, msg, "stream", ps.Stream, "topic", ps.Topic, "partition", ps.Partition, "pending", ps.Pending)
		}
	}
}

// fail prints err (unless a report already said it) and returns the exit code.
func (c *command) fail(err error, what string) int {
	if err == nil {
		return 0
	}
	var ce *ops.CheckError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintln(c.stderr, "poller check: failed:", ce.Error())
	case what != "":
		fmt.Fprintf(c.stderr, "poller %s: %v\n", what, err)
	}
	return 1
}

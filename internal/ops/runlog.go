package ops

import (
	"log/slog"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/logging"
)

// Disabled reports whether the configuration turns the sink off
// (enabled = false, SINK_ENABLED=false), logging the one line that says so.
func Disabled(cfg *config.Config, log *slog.Logger) bool {
	if cfg.Enabled {
		return false
	}
	log.Info("sink disabled by its configuration (enabled = false / SINK_ENABLED=false): nothing drained", "name", cfg.Name)
	return true
}

// LogLoaded writes what both binaries say of a configuration they loaded:
// the upstream-runtime keys they ignore, and every file value an
// environment variable replaced, in one line, so that a deployment that
// overrides the file by mistake is seen at once.
func LogLoaded(log *slog.Logger, cfg *config.Config) {
	if len(cfg.Ignored) > 0 {
		log.Info("ignoring upstream-runtime keys that mean nothing to this sink", "keys", cfg.Ignored)
	}
	if len(cfg.Replaced) > 0 {
		log.Warn("environment variables replaced values of the configuration file", "file", cfg.File(), "replaced", cfg.Replaced)
	}
}

// Idle reports whether a run did nothing worth an info line: no error, no
// object, no gap, nothing recovered, no partition failed or skipped.
func Idle(sum *drain.Summary, err error) bool {
	if err != nil || sum == nil || sum.Objects > 0 || sum.Failed > 0 || sum.Stopped != "" {
		return false
	}
	for _, p := range sum.Partitions {
		if len(p.Gaps) > 0 || p.Recovered || p.Skipped != "" || p.Stopped != "" || p.Error != "" {
			return false
		}
	}
	return true
}

// LogRun writes the run's summary line; with quietIdle, an idle run's
// line goes to debug (a polling loop would otherwise log it every second).
func LogRun(log *slog.Logger, sum *drain.Summary, err error, quietIdle bool) {
	if sum == nil {
		sum = &drain.Summary{}
	}
	if quietIdle && Idle(sum, err) {
		log = logging.AtLevel(log, slog.LevelDebug)
	}
	sum.Log(log, err)
}

package ops

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// CheckTimeBudget refuses a deadline_margin that leaves a run no time in a
// function whose timeout is functionTimeout, of which keptBack is kept for
// releasing leases and writing metrics: every run would stop before its
// first object and report "run finished, 0 objects" forever.
func CheckTimeBudget(cfg *config.Config, functionTimeout, keptBack time.Duration) error {
	p := &cfg.Plugin
	run := min(functionTimeout-keptBack, p.RunTimeout)
	if p.DeadlineMargin < run {
		return nil
	}
	return fmt.Errorf("config: plugin_config.deadline_margin (env SINK_DEADLINE_MARGIN) = %q leaves a run no time: "+
		"the function's timeout is %s, of which the last %s are kept for releasing leases and metrics (and run_timeout is %s), "+
		"so a run may last %s, and no object is started with less than deadline_margin left; "+
		"set deadline_margin below %s or raise the function's Timeout",
		p.DeadlineMargin, functionTimeout, keptBack, p.RunTimeout, max(run, 0), max(run, 0))
}

// FunctionTimeout is the Lambda function's timeout: env's AWS_LAMBDA_FUNCTION_TIMEOUT
// (seconds) when set (the runtime emulator sets it), else what is left of the
// first invocation, rounded up to whole seconds (Lambda timeouts are whole
// seconds and the first invocation has only just started).
func FunctionTimeout(env func(string) (string, bool), remaining time.Duration) time.Duration {
	v, _ := env("AWS_LAMBDA_FUNCTION_TIMEOUT")
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return time.Duration(math.Ceil(remaining.Seconds())) * time.Second
}

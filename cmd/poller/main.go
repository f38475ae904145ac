// Command poller runs the sink outside Lambda: in a loop, once, as a
// self-contained demo, or as an audit, check or status view of a sink.
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/initgc"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/logging"
)

const usage = `poller — drain Apache Iggy streams into S3 (the same run as the Lambda)

Usage: poller <command> [flags]   (flags may come before or after the command)

Commands:
  once     one drain run; the exit status says whether it failed
  run      one drain run every poll_interval until SIGINT/SIGTERM
  check    check Iggy, the stream and topics, the bucket (list and write
           under the prefix) and the state table, one line each; exit 1 on
           the first failure. Runs also make the S3 and table checks at start.
  audit    check every partition's objects: contiguous, no overlap, no
           unreported gap, up to the committed offset and the state's last
           written offset (exit 1 if not); -json prints one JSON report;
           read-only: joins no group, writes and creates nothing
  status   per partition: the group's committed offset, the newest offset
           and the lag (read-only)
  render   read messages from stdin, one payload per line (-envelope: JSON
           envelopes), and write to stdout the object the sink would write
           for them (-errors FILE: its error object, if any, to FILE);
           needs only the configuration (no Iggy, no S3)
  local    start S3, DynamoDB and an Iggy test broker with sample traffic on
           127.0.0.1, write their environment to local.env, run until Ctrl-C
           (what "make local" runs)
  demo     a self-contained demo: built-in Iggy broker, in-process S3 and
           state store; no configuration, no network
  help     this text
  version  the module version and VCS commit (also --version)

Configuration comes from the TOML file named by -config or SINK_CONFIG (the
upstream connector's format; a path, s3://bucket/key or ssm:/parameter),
overridden by environment variables (SINK_*, IGGY_*; see the README's
configuration table).

Flags:
`

// options are the parsed flags.
type options struct {
	config, logLevel, logFormat string
	interval                    time.Duration
	version, metrics            bool
	// audit
	json bool
	// render
	envelope          bool
	stream, topic, at string
	errorsFile        string
	partition         uint
	offset            uint64
	// local
	envFile string
}

// commandFlags lists the flags that belong to one command only.
var commandFlags = map[string][]string{
	"run":    {"interval"},
	"audit":  {"json"},
	"render": {"envelope", "stream", "topic", "partition", "offset", "time", "errors"},
	"local":  {"env-file"},
}

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("poller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", "", "configuration file: a path, s3://bucket/key or ssm:/parameter (default: $SINK_CONFIG)")
	fs.StringVar(&o.logLevel, "log-level", envOr("LOG_LEVEL", "info"), "log level: debug, info, warn, error (env LOG_LEVEL)")
	fs.StringVar(&o.logFormat, "log-format", envOr("LOG_FORMAT", logging.FormatAuto), "log format: auto (human on a terminal, else json), json, text, human (env LOG_FORMAT)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.metrics, "metrics", os.Getenv("SINK_METRICS") == "emf", "once, run: write each run's CloudWatch EMF metric lines to stdout, as the Lambda does (env SINK_METRICS=emf)")
	fs.DurationVar(&o.interval, "interval", 0, "run: time between runs (default: the first stream's poll_interval, at least 1s)")
	fs.BoolVar(&o.envelope, "envelope", false, `render: each input line is {"offset":N,"timestamp":"RFC 3339","headers":{...},"payload":...} (or "payload_base64")`)
	fs.StringVar(&o.stream, "stream", "", "render: stream name (default: the configuration's first stream)")
	fs.StringVar(&o.topic, "topic", "", "render: topic name (default: the stream's first topic)")
	fs.UintVar(&o.partition, "partition", 0, "render: partition id")
	fs.Uint64Var(&o.offset, "offset", 0, "render: offset of the first input line")
	fs.StringVar(&o.at, "time", "", "render: server time of bare input lines, RFC 3339 (default: now)")
	fs.StringVar(&o.errorsFile, "errors", "", `render: write the error object (invalid_payload = "error_object": the records that could not be written, JSON Lines) to this file`)
	fs.BoolVar(&o.json, "json", false, "audit: print the report as one JSON document (progress lines still go to stderr)")
	fs.StringVar(&o.envFile, "env-file", "local.env", "local: file to write the environment to (removed on exit)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse reads flags before and after the command. It returns the command
// and, when parsing ends the program, the exit code.
func parse(args []string, o *options, stderr io.Writer) (cmd string, code int, done bool) {
	fs := newFlagSet(o, stderr)
	if err := fs.Parse(args); err != nil {
		return "", exitFor(err), true
	}
	if fs.NArg() > 0 {
		cmd = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", exitFor(err), true
		}
	}
	if o.version {
		return "version", 0, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "poller %s: unexpected argument %q (flags may come before or after the command; see poller help)\n", cmd, fs.Arg(0))
		return "", 2, true
	}
	if cmd == "" {
		fs.Usage()
		return "", 2, true
	}
	var stray []string
	fs.Visit(func(f *flag.Flag) {
		for c, names := range commandFlags {
			if c != cmd && slices.Contains(names, f.Name) {
				stray = append(stray, fmt.Sprintf("-%s (a flag of %s)", f.Name, c))
			}
		}
	})
	if len(stray) > 0 {
		fmt.Fprintf(stderr, "poller %s: flag %s does not apply here\n", cmd, strings.Join(stray, ", "))
		return "", 2, true
	}
	return cmd, 0, false
}

func exitFor(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func main() {
	initgc.Done()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o options
	cmd, code, done := parse(args, &o, stderr)
	if done {
		return code
	}
	logger := logging.New(stderr, o.logLevel, o.logFormat)
	slog.SetDefault(logger)
	logging.CaptureStdlib(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &command{opts: &o, stdin: stdin, stdout: stdout, stderr: stderr, log: logger}
	switch cmd {
	case "help":
		newFlagSet(&o, stderr).Usage()
		return 0
	case "version":
		fmt.Fprintln(stdout, app.Version())
		return 0
	case "demo":
		if err := demo(ctx, stdout); err != nil {
			fmt.Fprintln(stderr, "demo:", err)
			return 1
		}
		return 0
	case "local":
		return c.local(ctx)
	case "render":
		return c.render(ctx)
	case "once", "run", "audit", "check", "status":
		return c.sink(ctx, cmd)
	}
	fmt.Fprintf(stderr, "poller: unknown command %q (want once, run, check, audit, status, render, local, demo, help or version)\n", cmd)
	return 2
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok && v != "" {
		return v
	}
	return def
}

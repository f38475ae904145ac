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
       poller help <command>      (or poller <command> -h: what it does, its flags)

Commands:
  once     one drain run; the exit status says whether it failed
           (-create-table: create a missing state table on AWS too)
  run      one drain run every poll_interval until SIGINT/SIGTERM
  check    print the effective configuration (each value with its source:
           file, environment or default), then check Iggy, the stream and
           topics, the bucket (list and write under the prefix) and the
           state table, one line each; exit 1 on the first failure. Runs
           also make the S3 and table checks at start.
  audit    check every partition's objects: contiguous, no overlap, no
           unreported gap, up to the committed offset and the state's last
           written offset (exit 1 if not); -json prints one JSON report;
           read-only: joins no group, writes and creates nothing
  status   per partition: the group's committed offset, the newest offset
           and the lag (read-only)
  replay   produce the archive back into Iggy, each archived message once,
           in order, partition p into partition p (-to-stream, -to-topic,
           -to-address; a missing target topic is created); safe to kill
           and run again: it goes on where the target stands
  render   read messages from stdin, one payload per line (-envelope: JSON
           envelopes), and write to stdout the object the sink would write
           for them (-errors FILE: its error object, if any, to FILE);
           needs only the configuration (no Iggy, no S3)
  local    start S3, DynamoDB and an Iggy test broker with sample traffic on
           127.0.0.1, write their environment to local.env, run until Ctrl-C
           (what "make local" runs; built in with -tags standins)
  demo     a self-contained demo: built-in Iggy broker, in-process S3 and
           state store; no configuration, no network ("make demo"; built
           in with -tags standins)
  help     this text; help <command>: that command's details and flags
  version  the module version and VCS commit (also --version)

Configuration comes from the TOML file named by -config or SINK_CONFIG (the
upstream connector's format; a path, s3://bucket/key or ssm:/parameter),
overridden by environment variables (SINK_*, IGGY_*; every setting is in
docs/configuration.md).

Exit status:
  0  done: the command succeeded, a sink with enabled = false did nothing,
     or once/run was stopped by SIGINT/SIGTERM (also during its start-up);
     help, -h and version
  1  failed: a check, a run, an audit (violations found, or it could not
     finish), status, render, local or demo; or the sink could not be set up
     (AWS, the state table, the credentials secret)
  2  bad usage or configuration: an unknown command or flag, a flag of
     another command, a stray argument, no command; a configuration that
     does not load; render -time that is not RFC 3339; table_format =
     "iceberg" in a poller built without Iceberg and none beside it

Flags:
`

// commandHelp is what `poller help <command>` says of each command before
// its flags.
var commandHelp = map[string]string{
	"once": `Usage: poller once [flags]

One drain run, the one a Lambda invocation makes: it checks the bucket (list
and write under the prefix) and the state table first, then archives what
the configured topics hold, and exits. The exit status says whether it
failed; SIGINT/SIGTERM stops it cleanly (leases released, groups left; exit
0), during its start-up too.

A missing state table is created, with a warning, when DynamoDB is a local
stand-in (AWS_ENDPOINT_URL_DYNAMODB names a host off AWS: moto, DynamoDB
Local, make local); on AWS only with -create-table, since a typo in
state_table would otherwise start from empty state. The Lambda never
creates it: the template does.`,
	"run": `Usage: poller run [flags]

A drain run (see poller help once) every -interval, default the first
stream's poll_interval (at least 1s), until SIGINT/SIGTERM, which stops the
current run cleanly (exit 0). Idle runs are logged at debug. A missing
state table is treated as by once.`,
	"check": `Usage: poller check [flags]

First the effective configuration, one option a line, with where each value
came from: the file, an environment variable (and the file's value it
replaced) or the default; secrets masked. Then the checks, one line each: Iggy reachable and the login accepted; each stream
and topic present; the bucket listable and writable under the prefix (a
multipart upload started and aborted: nothing is written); the bucket's
rule that aborts incomplete uploads (a warning); the state table. A check
that depends on a failed one is skipped. Exits 1 on a failure, naming the
setting to fix. Read-only: creates and writes nothing.`,
	"audit": `Usage: poller audit [flags]

Lists every configured partition's objects and checks them: contiguous, no
overlap, no unreported gap, up to the consumer group's committed offset and
the state's last written offset; with table_format = "iceberg", each table
too. Exits 1 on a violation (or when it cannot finish). Read-only: joins no
group, writes and creates nothing, so it may run beside live sinks.
Progress lines go to stderr.`,
	"status": `Usage: poller status [flags]

Per partition: the consumer group's committed offset, the newest offset and
the lag, as Iggy reports them. Read-only; touches neither S3 nor the state
table.`,
	"replay": `Usage: poller replay [flags]

Reads the archive the configuration describes (bucket, prefix, path
template, format, compression) of one topic (-stream, -topic; default the
configuration's first) and produces it into the target: -to-stream and
-to-topic (default the archived names) on the configured server or
-to-address. Partition p goes into partition p, in offset order; a missing
target topic is created with partitions up to the archive's highest id,
and a target without one of them is refused. Each message gets an id that names its
archived offset, and progress is kept in the state table (a lease per
target partition, an intent per chunk), so a replay killed at any point and
run again produces every message exactly once. A target partition another
producer writes into is reported and left alone. Gaps of the archive stay
gaps and are listed. docs/restore.md has the details and what a replay
does not keep (JSON keeps times to the second, headers as text).`,
	"render": `Usage: poller render [flags] < messages

Reads messages from stdin, one payload per line (-envelope: JSON envelopes),
and writes to stdout the object the sink would write for them; its key and
notes go to stderr. Needs only the configuration: no Iggy, no S3.`,
	"local": `Usage: poller local [flags]

Starts S3, DynamoDB and an Iggy test broker with sample traffic on
127.0.0.1, writes their environment to -env-file, and runs until Ctrl-C
(what make local runs). In another terminal, source that file and run the
poller against them. Built in only with -tags standins, as make local
builds the poller.`,
	"demo": `Usage: poller demo [flags]

A self-contained demo: a built-in Iggy broker, an in-process S3 and state
store, sample traffic drained and the objects shown. No configuration, no
network. Built in only with -tags standins: make demo.`,
	"help": `Usage: poller help [command]

The usage, or a command's: what it does and its flags.`,
	"version": `Usage: poller version   (or poller --version)

The module version and the VCS commit it was built from.`,
}

// commonFlags are the flags every command that reads a configuration takes.
var commonFlags = []string{"config", "log-level", "log-format"}

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
	value             string
	partition         uint
	offset            uint64
	// replay
	toStream, toTopic, toAddress string
	partitions                   string
	fromOffset, toOffset         string
	since, until                 string
	generation                   string
	appendTarget, includeErrors  bool
	parallel, chunkMessages      int
	// local
	envFile string
	// once, run
	createTable bool
	// help: the command asked about
	helpTopic string
}

// commands lists the commands in the order the usage gives them.
var commands = []string{"once", "run", "check", "audit", "status", "replay", "render", "local", "demo", "help", "version"}

// commandFlags lists the flags that belong to some commands only.
var commandFlags = map[string][]string{
	"once":   {"create-table", "metrics"},
	"run":    {"interval", "create-table", "metrics"},
	"audit":  {"json"},
	"replay": {"stream", "topic", "to-stream", "to-topic", "to-address", "partitions", "from-offset", "to-offset", "since", "until", "generation", "append", "include-errors", "parallel", "chunk-messages", "json"},
	"render": {"envelope", "stream", "topic", "partition", "offset", "time", "errors", "value"},
	"local":  {"env-file"},
}

// flagOwners lists the commands a flag belongs to, in usage order; none
// for a common flag.
func flagOwners(name string) []string {
	var owners []string
	for _, c := range commands {
		if slices.Contains(commandFlags[c], name) {
			owners = append(owners, c)
		}
	}
	return owners
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
	fs.StringVar(&o.stream, "stream", "", "render, replay: stream name (default: the configuration's first stream)")
	fs.StringVar(&o.topic, "topic", "", "render, replay: topic name (default: the stream's first topic)")
	fs.StringVar(&o.toStream, "to-stream", "", "replay: the target stream (default: the archived stream's name)")
	fs.StringVar(&o.toTopic, "to-topic", "", "replay: the target topic (default: the archived topic's name; created when missing)")
	fs.StringVar(&o.toAddress, "to-address", "", "replay: the target Iggy server, host:port (default: iggy.address), with the configured credentials")
	fs.StringVar(&o.partitions, "partitions", "", "replay: the partitions to replay, e.g. 0,2,5 (default: every archived one)")
	fs.StringVar(&o.fromOffset, "from-offset", "", "replay: the first archived offset to replay (default: the first)")
	fs.StringVar(&o.toOffset, "to-offset", "", "replay: the last archived offset to replay, inclusive (default: the last)")
	fs.StringVar(&o.since, "since", "", "replay: only messages whose server time is at or after this, RFC 3339")
	fs.StringVar(&o.until, "until", "", "replay: only messages whose server time is before this, RFC 3339")
	fs.StringVar(&o.generation, "generation", "", "replay: the archived generation (incarnation of the topic) to replay (default: the newest)")
	fs.IntVar(&o.chunkMessages, "chunk-messages", 5000, "replay: the most messages one produced batch holds (a batch holds at most 4 MiB too)")
	fs.IntVar(&o.parallel, "parallel", 4, "replay: how many partitions to replay at once, each on a connection of its own")
	fs.BoolVar(&o.includeErrors, "include-errors", false, `replay: replay the records of error objects too (invalid_payload = "error_object"), in offset order`)
	fs.BoolVar(&o.appendTarget, "append", false, "replay: produce after the messages a target partition already holds (its offsets are then not the archive's)")
	fs.UintVar(&o.partition, "partition", 0, "render: partition id")
	fs.Uint64Var(&o.offset, "offset", 0, "render: offset of the first input line")
	fs.StringVar(&o.at, "time", "", "render: server time of bare input lines, RFC 3339 (default: now)")
	fs.StringVar(&o.value, "value", "", `render, under a path_template with {payload.<path>}: the value whose object to write, its folder segment as in the key (several fields' joined by /); default: the first message's`)
	fs.StringVar(&o.errorsFile, "errors", "", `render: write the error object (invalid_payload = "error_object": the records that could not be written, JSON Lines) to this file`)
	fs.BoolVar(&o.json, "json", false, "audit, replay: print the report as one JSON document (progress lines still go to stderr)")
	fs.StringVar(&o.envFile, "env-file", "local.env", "local: file to write the environment to (removed on exit)")
	fs.BoolVar(&o.createTable, "create-table", false, "once, run: create a missing state table even on AWS (by default only at a local DynamoDB endpoint such as moto's)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// writeHelp prints the usage (cmd "" or "help" alone), or cmd's help: what
// it does, its own flags and the common ones.
func writeHelp(w io.Writer, cmd string) {
	text, ok := commandHelp[cmd]
	if !ok {
		fmt.Fprint(w, usage)
		newFlagSet(&options{}, w).PrintDefaults()
		return
	}
	fmt.Fprintln(w, text)
	own, common := commandFlags[cmd], commonFlags
	switch cmd {
	case "help", "version":
		own, common = nil, nil
	case "demo":
		common = common[1:] // no configuration
	case "local":
		common = common[1:]
	}
	if len(own) > 0 {
		fmt.Fprintf(w, "\nFlags of %s:\n", cmd)
		printFlags(w, own)
	}
	if len(common) > 0 {
		fmt.Fprintln(w, "\nCommon flags (before or after the command):")
		printFlags(w, common)
	}
	if cmd != "help" && cmd != "version" {
		fmt.Fprintln(w, "\nExit status: 0 done, 1 failed, 2 bad usage or configuration (poller help says more).")
	}
}

// printFlags prints the named flags as flag.PrintDefaults does, with
// their defaults.
func printFlags(w io.Writer, names []string) {
	all := newFlagSet(&options{}, io.Discard)
	sub := flag.NewFlagSet("poller", flag.ContinueOnError)
	sub.SetOutput(w)
	for _, n := range names {
		f := all.Lookup(n)
		sub.Var(f.Value, f.Name, f.Usage)
	}
	sub.PrintDefaults()
}

// parse reads flags before and after the command. It returns the command
// and, when parsing ends the program, the exit code. -h before the command
// prints the usage, after it the command's help.
func parse(args []string, o *options, stderr io.Writer) (cmd string, code int, done bool) {
	fs := newFlagSet(o, stderr)
	fs.Usage = func() { writeHelp(stderr, cmd) }
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
	if cmd == "help" && fs.NArg() == 1 {
		o.helpTopic = fs.Arg(0)
		if _, ok := commandHelp[o.helpTopic]; !ok {
			fmt.Fprintf(stderr, "poller help: unknown command %q (want %s)\n", o.helpTopic, strings.Join(commands, ", "))
			return "", 2, true
		}
		return cmd, 0, false
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
		if owners := flagOwners(f.Name); len(owners) > 0 && !slices.Contains(owners, cmd) {
			stray = append(stray, fmt.Sprintf("-%s (a flag of %s)", f.Name, strings.Join(owners, ", ")))
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
		writeHelp(stdout, o.helpTopic)
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
	case "once", "run", "audit", "check", "status", "replay":
		return c.sink(ctx, cmd)
	}
	fmt.Fprintf(stderr, "poller: unknown command %q (want once, run, check, audit, status, replay, render, local, demo, help or version)\n", cmd)
	return 2
}

func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok && v != "" {
		return v
	}
	return def
}

//go:build linux

// Command sizing measures what one invocation of the Lambda drains at
// several memory sizes: the real bootstrap under aws-lambda-rie, each run
// in a cgroup whose CPU quota is Lambda's share for that size, against the
// local stand-ins (the in-repo Iggy broker, versitygw or MinIO, moto) on
// loopback. It prints a Markdown table for the README's Scaling section.
//
// Run it through scripts/sizing.sh (root on Linux, for the cgroups).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/devenv"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/cpulimit"
)

type options struct {
	sizes        []int
	compressions []string
	messages     int
	partitions   int
	timeout      time.Duration
	repeat       int
}

// measurement is one invocation's figures.
type measurement struct {
	memoryMB    int
	compression string
	share       float64
	messages    uint64
	bytes       uint64 // stored (compressed when compression is on)
	runMS       int64
	wall        time.Duration
	stopped     string
	throttled   int64
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sizing:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sizing:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("sizing", flag.ContinueOnError)
	sizes := fs.String("sizes", "256,1024,1769", "function memory sizes (MB) to emulate")
	comps := fs.String("compression", "none,zstd", "compressions to measure at each size")
	fs.IntVar(&o.messages, "messages", 600000, "sample messages seeded into the broker (200-400 bytes of JSON each)")
	fs.IntVar(&o.partitions, "partitions", 16, "partitions of the sample topic")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "the function timeout of each invocation (runs that cannot drain everything stop before it)")
	fs.IntVar(&o.repeat, "repeat", 1, "invocations per size and compression (the best is reported)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 128 || n > 10240 {
			return o, fmt.Errorf("-sizes: %q is not a Lambda memory size (128..10240 MB)", s)
		}
		o.sizes = append(o.sizes, n)
	}
	for _, c := range strings.Split(*comps, ",") {
		switch c = strings.TrimSpace(c); c {
		case "none", "gzip", "zstd":
			o.compressions = append(o.compressions, c)
		default:
			return o, fmt.Errorf("-compression: %q is not none, gzip or zstd", c)
		}
	}
	if o.messages < 1 || o.partitions < 1 || o.timeout < 20*time.Second || o.repeat < 1 {
		return o, errors.New("-messages, -partitions and -repeat must be positive and -timeout at least 20s")
	}
	return o, nil
}

func run(ctx context.Context, o options, out, logw io.Writer) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	rie, err := devenv.FindTool(root, "aws-lambda-rie")
	if err != nil {
		return err
	}
	// Probe the cgroups before minutes of set-up.
	probe, err := cpulimit.New(fmt.Sprintf("iggy-sizing-probe-%d", os.Getpid()), 1)
	if err != nil {
		return fmt.Errorf("%w: run as root on Linux with a cgroup (v1 or v2) CPU controller", err)
	}
	probe.Close()
	fmt.Fprintf(logw, "seeding %d messages over %d partitions and starting the stand-ins ...\n", o.messages, o.partitions)
	st, err := devenv.Start(ctx, devenv.Options{Root: root, S3Port: -1, DynamoPort: -1, IggyPort: -1,
		Seed: devenv.Seed{Stream: "app", Topic: "logs", Partitions: o.partitions, Messages: o.messages},
		Log:  slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer st.Close()
	work, err := os.MkdirTemp("", "iggy-sizing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// What build-SinkFunction packages: the lean bootstrap (these runs use
	// no tables, so it never hands over) and the full build beside it.
	bootstrap := filepath.Join(work, "bootstrap")
	for out, tags := range map[string]string{bootstrap: "lambda.norpc,noiceberg", bootstrap + "-iceberg": "lambda.norpc"} {
		build := exec.Command("go", "build", "-tags", tags, "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/lambda")
		build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", filepath.Base(out), err, b)
		}
	}
	load0 := loadAverage()
	var ms []measurement
	for _, size := range o.sizes {
		for _, comp := range o.compressions {
			var best *measurement
			for i := range o.repeat {
				m, err := measure(ctx, st, rie, bootstrap, size, comp, o.timeout, i)
				if err != nil {
					return err
				}
				fmt.Fprintf(logw, "%5d MB %-4s: %d messages, %.1f MB stored in %d ms (%s); throttled %d times\n",
					size, comp, m.messages, float64(m.bytes)/1e6, m.runMS, orDash(m.stopped), m.throttled)
				if best == nil || m.rate() > best.rate() {
					best = &m
				}
			}
			ms = append(ms, *best)
		}
	}
	writeTable(out, ms, st.S3Kind, load0, loadAverage())
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "drained everything"
	}
	return "stopped: " + s
}

// measure runs one invocation of the bootstrap at size MB, with a consumer
// group and prefix of its own so that it drains the topic from the start.
func measure(ctx context.Context, st *devenv.Stack, rie, bootstrap string, size int, comp string, timeout time.Duration, attempt int) (measurement, error) {
	m := measurement{memoryMB: size, compression: comp}
	name := fmt.Sprintf("sizing-%d-%s-%d-%d", size, comp, attempt, time.Now().UnixNano())
	g, err := cpulimit.New(name, cpulimit.LambdaShare(size))
	if err != nil {
		return m, err
	}
	defer g.Close()
	m.share = g.Share
	api, err := freeAddr()
	if err != nil {
		return m, err
	}
	addr, err := freeAddr()
	if err != nil {
		return m, err
	}
	cmd := g.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", api, bootstrap)
	cmd.Env = append(cmd.Env, st.Env()...)
	cmd.Env = append(cmd.Env,
		"AWS_LAMBDA_FUNCTION_NAME=iggy-s3-sink", "AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(timeout.Seconds())),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(size), "AWS_EC2_METADATA_DISABLED=true",
		// Lambda shows a function 2 vCPUs below 3008 MB; the cgroup is its quota.
		"GOMAXPROCS=2",
		"SINK_CONSUMER_GROUP="+name, "SINK_PREFIX="+name, "SINK_COMPRESSION="+comp,
		// The template's defaults: 8MiB objects by size; the tail is flushed at once.
		"SINK_FILE_ROTATION=size", "SINK_MAX_MESSAGES_PER_FILE=", "SINK_MAX_FILE_AGE=1ms")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		return m, err
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	if err := waitListen(addr, 10*time.Second); err != nil {
		return m, fmt.Errorf("%w\n%s", err, logs.String())
	}
	start := time.Now()
	body, err := invoke(ctx, "http://"+addr+"/2015-03-31/functions/function/invocations", timeout+30*time.Second)
	m.wall = time.Since(start)
	if err != nil {
		return m, fmt.Errorf("invoke at %d MB: %w\n%s", size, err, logs.String())
	}
	var sum struct {
		Messages   uint64 `json:"messages"`
		Bytes      uint64 `json:"bytes"`
		DurationMS int64  `json:"duration_ms"`
		Stopped    string `json:"stopped"`
		Failed     int    `json:"failed_partitions"`
	}
	if err := json.Unmarshal(body, &sum); err != nil || sum.DurationMS == 0 || sum.Failed > 0 {
		return m, fmt.Errorf("invocation at %d MB did not return a clean summary: %v: %s", size, err, body)
	}
	m.messages, m.bytes, m.runMS, m.stopped = sum.Messages, sum.Bytes, sum.DurationMS, sum.Stopped
	m.throttled, _ = g.Throttled()
	return m, nil
}

func (m measurement) rate() float64 {
	if m.runMS == 0 {
		return 0
	}
	return float64(m.messages) / (float64(m.runMS) / 1000)
}

func invoke(ctx context.Context, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// writeTable prints the measurements as the README's table: per size, the
// rate as messages and as MB of JSON lines per second (the uncompressed
// size: the none run's bytes per message), and what that makes per minute
// and per hour of invocations.
func writeTable(w io.Writer, ms []measurement, s3Kind string, load0, load1 string) {
	perMsg := map[int]float64{}
	for _, m := range ms {
		if m.compression == "none" && m.messages > 0 {
			perMsg[m.memoryMB] = float64(m.bytes) / float64(m.messages)
		}
	}
	fmt.Fprintf(w, "\n| Memory | CPU share | Compression | Messages/s | MB/s (JSON lines) | Stored MB/s | Run | Held by the quota |\n|---|---|---|---|---|---|---|---|\n")
	for _, m := range ms {
		secs := float64(m.runMS) / 1000
		in := "-"
		if b := perMsg[m.memoryMB]; b > 0 {
			in = fmt.Sprintf("%.1f", float64(m.messages)*b/secs/1e6)
		}
		// The share of 100 ms CFS periods in which the quota held the
		// invocation back: near 100% the run was CPU-bound at this size; near
		// 0 something else (the shared stand-ins) set the pace.
		held := float64(m.throttled) / max(secs*10, 1) * 100
		fmt.Fprintf(w, "| %d MB | %.3f vCPU | %s | %.0f | %s | %.1f | %.1fs, %s | %.0f%% |\n",
			m.memoryMB, m.share, m.compression, m.rate(), in, float64(m.bytes)/secs/1e6, secs, orDash(m.stopped), min(held, 100))
	}
	fmt.Fprintf(w, "\nMeasured with the real bootstrap under aws-lambda-rie, each invocation in a cgroup with CPU quota = memory/%d MB of one CPU\n"+
		"(GOMAXPROCS=2), against the in-repo Iggy broker, %s and moto_server on loopback; %d CPUs, load average %s before and %s after.\n",
		cpulimit.FullCPUMB, s3Kind, runtime.NumCPU(), load0, load1)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitListen(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("aws-lambda-rie did not listen on %s within %s", addr, timeout)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the repository (no go.mod found above the working directory)")
		}
		dir = parent
	}
}

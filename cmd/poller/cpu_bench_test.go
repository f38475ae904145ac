package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// BenchmarkPollerOnce measures what Lambda bills: the CPU time (user +
// system, from the process's rusage) one `poller once` spends per GB it
// archives, and its throughput. Each iteration feeds a fresh topic — 4
// partitions, BENCH_MESSAGES (200,000) JSON messages of 1 KiB — into the
// in-repo broker, and the poller drains it into versitygw with its state
// on moto_server, over plain HTTP (so payloads are signed), 8 MiB objects.
// Each poller also drains a topic of fixedMessages, untimed: fixed-cpu-ms
// is that run's CPU, what every run costs whatever it archives, and
// marginal-cpu-s/GB what the large run spent beyond it, per GB.
//
// With BENCH_BASELINE_POLLER naming another build of the poller (say, of an
// earlier commit: scripts/cpu-per-gb.sh builds one), each iteration runs
// both on topics of their own, in alternating order, and the benchmark also
// reports the baseline's figures and the ratio cpu-s/GB this/baseline (of
// the totals, and the median, least and greatest of each iteration's):
//
//	go test ./cmd/poller -run '^$' -bench PollerOnce -benchtime 3x
//
// This tree's poller is built as the Lambda's bootstrap is, without Iceberg
// (-tags noiceberg: these runs use no tables); BENCH_TAGS sets other tags,
// BENCH_TAGS=none builds the full program.
//
// The broker speaks IGGY_TEST_PROTOCOL (0.9 by default) to this tree's
// poller; BENCH_BASELINE_PROTOCOL gives the baseline a broker of its own
// in that protocol: a build from before the 0.9 client speaks only 0.8, so
// "this on 0.9, baseline on 0.8" compares what each drains in production.
func BenchmarkPollerOnce(b *testing.B) {
	messages := 200_000
	if v := os.Getenv("BENCH_MESSAGES"); v != "" {
		if _, err := fmt.Sscan(v, &messages); err != nil || messages < 1 {
			b.Fatalf("BENCH_MESSAGES=%q: want a positive number", v)
		}
	}
	type poller struct {
		name, path string
		broker     *iggytest.Broker
	}
	this := iggyadmin.BrokerProtocol(b)
	tags, ok := os.LookupEnv("BENCH_TAGS")
	if !ok {
		tags = "noiceberg"
	} else if tags == "none" {
		tags = ""
	}
	pollers := []poller{{"this", buildPollerTags(b, tags), benchBroker(b, this)}}
	if base := os.Getenv("BENCH_BASELINE_POLLER"); base != "" {
		br := pollers[0].broker
		if p := os.Getenv("BENCH_BASELINE_PROTOCOL"); p != "" && p != this {
			br = benchBroker(b, p)
		}
		pollers = append(pollers, poller{"baseline", base, br})
	}
	env := benchEnv(b)

	type total struct {
		cpu, wall time.Duration
		bytes     uint64
		fixed     time.Duration // the runs of a topic of fixedMessages
		perGB     []float64     // each iteration's cpu-s/GB
	}
	totals := make([]total, len(pollers))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range pollers {
			k := (i + j) % len(pollers) // alternate who goes first
			p := pollers[k]
			b.StopTimer()
			topic := fmt.Sprintf("%s-%d", p.name, i)
			feedTopic(b, p.broker, topic, messages)
			feedTopic(b, p.broker, topic+"-small", fixedMessages)
			b.StartTimer()
			cpu, wall, n := runOnce(b, p.path, append(env, "SINK_TOPICS="+topic, "IGGY_ADDRESS="+p.broker.Addr()))
			b.StopTimer()
			fixed, _, _ := runOnce(b, p.path, append(env, "SINK_TOPICS="+topic+"-small", "IGGY_ADDRESS="+p.broker.Addr()))
			b.StartTimer()
			t := &totals[k]
			t.cpu += cpu
			t.wall += wall
			t.bytes += n
			t.fixed += fixed
			t.perGB = append(t.perGB, cpu.Seconds()/(float64(n)/1e9))
		}
	}
	b.StopTimer()
	perGB := func(t total) float64 { return t.cpu.Seconds() / (float64(t.bytes) / 1e9) }
	marginal := func(t total) float64 { return (t.cpu - t.fixed).Seconds() / (float64(t.bytes) / 1e9) }
	fixedMS := func(t total) float64 { return float64(t.fixed.Milliseconds()) / float64(b.N) }
	b.SetBytes(int64(totals[0].bytes) / int64(b.N))
	b.ReportMetric(perGB(totals[0]), "cpu-s/GB")
	b.ReportMetric(fixedMS(totals[0]), "fixed-cpu-ms")
	b.ReportMetric(marginal(totals[0]), "marginal-cpu-s/GB")
	b.ReportMetric(float64(totals[0].bytes)/1e6/totals[0].wall.Seconds(), "MB/s-wall")
	if len(totals) > 1 {
		this, base := totals[0], totals[1]
		b.ReportMetric(perGB(base), "baseline-cpu-s/GB")
		b.ReportMetric(fixedMS(base), "baseline-fixed-cpu-ms")
		b.ReportMetric(marginal(base), "baseline-marginal-cpu-s/GB")
		b.ReportMetric(float64(base.bytes)/1e6/base.wall.Seconds(), "baseline-MB/s-wall")
		b.ReportMetric(perGB(this)/perGB(base), "cpu-ratio")
		b.ReportMetric(marginal(this)/marginal(base), "marginal-cpu-ratio")
		// The machine's speed drifts over a long benchmark; the two runs of
		// one iteration go back to back, so their ratio drifts less.
		ratios := make([]float64, b.N)
		for i := range ratios {
			ratios[i] = this.perGB[i] / base.perGB[i]
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "cpu-ratio-median")
		b.ReportMetric(ratios[0], "cpu-ratio-min")
		b.ReportMetric(ratios[len(ratios)-1], "cpu-ratio-max")
	}
}

// benchEnv starts versitygw (bucket "bench") and moto_server, and returns
// the poller's environment for them: stream "bench", 8 MiB objects.
func benchEnv(b *testing.B) []string {
	b.Helper()
	s3srv := testenv.StartVersity(b)
	s3srv.CreateBucket(b, "bench")
	moto := testenv.StartMoto(b)
	return append(os.Environ(),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=moto", "AWS_SECRET_ACCESS_KEY=moto-secret", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB="+moto.Endpoint,
		"SINK_BUCKET=bench", "SINK_ENDPOINT="+s3srv.Endpoint, "SINK_ACCESS_KEY_ID="+s3srv.AccessKey, "SINK_SECRET_ACCESS_KEY="+s3srv.SecretKey,
		"SINK_STREAM=bench", "SINK_MAX_FILE_SIZE=8MiB", "SINK_MAX_FILE_AGE=1ms", "SINK_RUN_TIMEOUT=10m",
		"SINK_STATE_TABLE=bench-state")
}

// fixedMessages is the size of the topic whose runs measure what a run
// costs whatever it archives (start-up, connections, the lease, one small
// object): a Lambda pays it once per invocation, the process start-up
// only on a cold start.
const fixedMessages = 100

// benchBroker starts a broker pinned to protocol, with the stream "bench".
func benchBroker(b *testing.B, protocol string) *iggytest.Broker {
	b.Helper()
	br, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)), iggytest.WithProtocol(protocol))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	if _, err := br.CreateStream("bench"); err != nil {
		b.Fatal(err)
	}
	return br
}

// feedTopic creates topic with 4 partitions holding messages 1 KiB JSON
// messages, round robin.
func feedTopic(b *testing.B, br *iggytest.Broker, topic string, messages int) {
	b.Helper()
	if _, err := br.CreateTopic("bench", topic, 4); err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 1024)
	for n := 0; n < messages; n++ {
		payload := fmt.Appendf(nil, `{"n":%d,"level":"INFO","msg":"request served","path":"/api/items/%d","pad":"`, n, n)
		payload = append(append(payload, pad[:1024-2-len(payload)]...), `"}`...)
		if _, err := br.Append("bench", topic, uint32(n%4), payload, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// runOnce runs `poller once` and returns its CPU time, wall time and the
// bytes its run summary says it archived.
func runOnce(b *testing.B, bin string, env []string) (cpu, wall time.Duration, archived uint64) {
	b.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "once")
	// LOG_FORMAT rather than -log-format: builds from before the flag log
	// JSON anyway, and refuse flags they do not know.
	cmd.Env, cmd.Stdout, cmd.Stderr = append(env, "LOG_FORMAT=json"), &stderr, &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s once: %v\n%s", filepath.Base(bin), err, stderr.String())
	}
	wall = time.Since(began)
	sc := bufio.NewScanner(&stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg     string `json:"msg"`
			Bytes   uint64 `json:"bytes"`
			Stopped string `json:"stopped"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && strings.HasPrefix(rec.Msg, "run ") {
			if rec.Msg != "run finished" {
				b.Fatalf("%s once: %s (%s):\n%s", filepath.Base(bin), rec.Msg, rec.Stopped, stderr.String())
			}
			archived = rec.Bytes
		}
	}
	if archived == 0 {
		b.Fatalf("%s once archived nothing:\n%s", filepath.Base(bin), stderr.String())
	}
	st := cmd.ProcessState
	return st.UserTime() + st.SystemTime(), wall, archived
}

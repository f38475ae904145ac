package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
)

// BenchmarkReplay compares a replay with the archiving of the same data,
// in one run: each iteration feeds a fresh topic (4 partitions,
// BENCH_MESSAGES (100,000) JSON messages of 1 KiB) into the in-repo broker,
// archives it with `poller once` (versitygw, 8 MiB objects, the state on
// moto_server), then replays it with `poller replay` into a new topic of
// the same broker. replay/archive is the ratio of their messages per
// second (wall time), cpu-ratio that of their CPU time, replay-peak-rss-MiB
// the replay process's peak resident memory. BENCH_FORMAT sets
// output_format (json_lines):
//
//	go test ./cmd/poller -run '^$' -bench Replay -benchtime 3x
func BenchmarkReplay(b *testing.B) {
	messages := 100_000
	if v := os.Getenv("BENCH_MESSAGES"); v != "" {
		if _, err := fmt.Sscan(v, &messages); err != nil || messages < 1 {
			b.Fatalf("BENCH_MESSAGES=%q: want a positive number", v)
		}
	}
	format := "json_lines"
	if v := os.Getenv("BENCH_FORMAT"); v != "" {
		format = v
	}
	bin := buildPollerTags(b, "noiceberg")
	br := benchBroker(b, iggyadmin.BrokerProtocol(b))
	env := append(benchEnv(b), "SINK_OUTPUT_FORMAT="+format, "IGGY_ADDRESS="+br.Addr())
	var archiveWall, replayWall, archiveCPU, replayCPU time.Duration
	var peakKB int64
	var bytesDone uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		topic := fmt.Sprintf("replay-%d", i)
		feedTopic(b, br, topic, messages)
		ienv := append(env, "SINK_TOPICS="+topic)
		b.StartTimer()
		cpu, wall, n := runOnce(b, bin, ienv)
		archiveWall, archiveCPU, bytesDone = archiveWall+wall, archiveCPU+cpu, bytesDone+n
		var kb int64
		cpu, wall, kb = runReplay(b, bin, ienv, topic+"-restored", messages)
		peakKB = max(peakKB, kb)
		replayWall, replayCPU = replayWall+wall, replayCPU+cpu
	}
	b.StopTimer()
	b.SetBytes(int64(bytesDone) / int64(b.N))
	total := float64(messages * b.N)
	b.ReportMetric(total/archiveWall.Seconds(), "archive-msgs/s")
	b.ReportMetric(total/replayWall.Seconds(), "replay-msgs/s")
	b.ReportMetric(archiveWall.Seconds()/replayWall.Seconds(), "replay/archive")
	b.ReportMetric(replayCPU.Seconds()/archiveCPU.Seconds(), "cpu-ratio")
	b.ReportMetric(float64(peakKB)/1024, "replay-peak-rss-MiB")
}

// runReplay runs `poller replay` into target and checks its summary.
func runReplay(b *testing.B, bin string, env []string, target string, messages int) (cpu, wall time.Duration, peakKB int64) {
	b.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "replay", "-to-topic", target, "-json")
	cmd.Env, cmd.Stdout, cmd.Stderr = append(env, "LOG_FORMAT=json"), &stdout, &stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	wall = time.Since(began)
	var sum ops.ReplaySummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || sum.Replayed != uint64(messages) {
		b.Fatalf("replay produced %d of %d messages (%v):\n%s", sum.Replayed, messages, err, stderr.String())
	}
	st := cmd.ProcessState
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		peakKB = ru.Maxrss
	}
	return st.UserTime() + st.SystemTime(), wall, peakKB
}

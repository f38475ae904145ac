package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// logLine is the part of a JSON log line these tests read.
type logLine struct {
	Msg            string `json:"msg"`
	Stopped        string `json:"stopped"`
	Failed         int    `json:"failed_partitions"`
	Objects        int    `json:"objects"`
	Leases         int    `json:"leases"`
	LeasesReleased int    `json:"leases_released"`
	Groups         int    `json:"groups"`
	GroupsLeft     int    `json:"groups_left"`
	Partitions     []struct {
		Partition uint32 `json:"partition"`
		Skipped   string `json:"skipped"`
		Error     string `json:"error"`
	} `json:"partitions"`
}

func logLines(t *testing.T, out string) []logLine {
	t.Helper()
	var lines []logLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestSignalReleasesLeases (issue 14): `poller run` over 4 partitions gets
// SIGTERM at seeded random moments mid-drain. It must exit 0 with a
// summary that says it stopped (not failed) and that it released every
// lease and left its group; `poller once` started right after must drain
// every partition without skipping one (the leases last the default 60 s,
// so a lease left behind would show). At the end an independent reader
// finds every message in exactly one object.
func TestSignalReleasesLeases(t *testing.T) {
	st := newStack(t, 0)
	env := append(append([]string{}, st.env...), "SINK_TOPICS=stop", "SINK_FILE_ROTATION=size", "SINK_MAX_FILE_SIZE=64KiB",
		"SINK_MAX_MESSAGES_PER_FILE=", "SINK_LEASE_DURATION=60s", "SINK_BATCH_LENGTH=200")
	bin := buildPoller(t)
	rng := rand.New(rand.NewPCG(14, 14))
	const stops = 3
	for i := 0; i < stops; i++ {
		// Fresh traffic, so that every stop lands mid-drain.
		if err := st.broker.Seed("app", "stop", 4, 20000); err != nil {
			t.Fatal(err)
		}
		wait := time.Duration(200+rng.IntN(1300)) * time.Millisecond
		run := exec.Command(bin, "run", "-interval", "100ms", "-log-format", "json")
		run.Env = append(os.Environ(), env...)
		logs := &testenv.LockedBuffer{}
		run.Stderr = logs
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		// Its first line comes after it listens for signals: a SIGTERM
		// before that (a loaded machine starts it slowly) kills it.
		waitFor(t, 30*time.Second, func() bool { return logs.String() != "" })
		time.Sleep(wait)
		if err := run.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := run.Wait(); err != nil {
			t.Fatalf("stop %d (after %s): poller run exited %v:\n%s", i, wait, err, logs.String())
		}
		t.Logf("stop %d: SIGTERM after %s, exited in %s", i, wait, time.Since(start).Round(time.Millisecond))
		checkStopped(t, i, logs.String())

		once := exec.Command(bin, "once", "-log-format", "json")
		once.Env = append(os.Environ(), env...)
		out, err := once.CombinedOutput()
		if err != nil {
			t.Fatalf("once after stop %d: %v\n%s", i, err, out)
		}
		for _, l := range logLines(t, string(out)) {
			for _, p := range l.Partitions {
				if strings.HasPrefix(p.Skipped, "leased by another run") {
					t.Fatalf("once after stop %d skipped partition %d: %s", i, p.Partition, p.Skipped)
				}
			}
		}
	}
	drainAll(t, bin, env)
	checkEveryMessageOnce(t, st, "stop", 4, stops*5000) // Seed spreads 20000 over the partitions
}

// checkStopped reads a stopped poller's log: the last run either stopped on
// the signal or had finished; no partition failed; the final line reports
// every lease released and every group left.
func checkStopped(t *testing.T, i int, out string) {
	t.Helper()
	lines := logLines(t, out)
	var last, final *logLine
	for j := range lines {
		switch lines[j].Msg {
		case "run stopped", "run finished", "run failed":
			last = &lines[j]
		case "poller stopped on a signal":
			final = &lines[j]
		}
	}
	switch {
	case final == nil:
		t.Fatalf("stop %d: no final line:\n%s", i, out)
	case last == nil:
		// The signal came between runs, after idle ones (logged at debug).
	case last.Msg == "run failed" || last.Failed != 0:
		t.Fatalf("stop %d: a stop reported as a failure: %+v\n%s", i, *last, out)
	case last.Msg == "run stopped" && last.Stopped != "signal":
		t.Fatalf("stop %d: stopped %q, want signal", i, last.Stopped)
	case final.LeasesReleased != final.Leases || final.GroupsLeft != final.Groups:
		t.Fatalf("stop %d: released %d of %d leases, left %d of %d groups", i, final.LeasesReleased, final.Leases, final.GroupsLeft, final.Groups)
	}
}

// drainAll runs `poller once` until a run writes nothing.
func drainAll(t *testing.T, bin string, env []string) {
	t.Helper()
	for i := 0; i < 50; i++ {
		once := exec.Command(bin, "once", "-log-format", "json")
		once.Env = append(os.Environ(), env...)
		out, err := once.CombinedOutput()
		if err != nil {
			t.Fatalf("once: %v\n%s", err, out)
		}
		for _, l := range logLines(t, string(out)) {
			if l.Msg == "run finished" && l.Objects == 0 {
				return
			}
		}
	}
	t.Fatal("not drained after 50 runs")
}

// checkEveryMessageOnce reads every object under the poller's prefix back,
// on its own (not through the sink), and counts each offset of topic.
func checkEveryMessageOnce(t *testing.T, st *stack, topic string, partitions int, perPartition uint64) {
	t.Helper()
	ctx := context.Background()
	client := st.s3.Client(t)
	seen := make([]map[uint64]int, partitions)
	for i := range seen {
		seen[i] = map[uint64]int{}
	}
	pager := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String("poller"), Prefix: aws.String("p/app/" + topic + "/")})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			n, ok := keys.ParseName(*o.Key)
			if !ok || n.Gap || n.Void {
				t.Fatalf("unexpected object %s", *o.Key)
			}
			got, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("poller"), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
				var r struct {
					Offset    uint64 `json:"offset"`
					Partition uint32 `json:"partition_id"`
				}
				if err := json.Unmarshal(line, &r); err != nil || r.Partition != n.Partition {
					t.Fatalf("%s: record %q: %v", *o.Key, line, err)
				}
				seen[r.Partition][r.Offset]++
			}
		}
	}
	for p := range seen {
		for off := uint64(0); off < perPartition; off++ {
			if seen[p][off] != 1 {
				t.Fatalf("partition %d offset %d is in %d objects", p, off, seen[p][off])
			}
		}
		if uint64(len(seen[p])) != perPartition {
			t.Fatalf("partition %d: %d offsets archived, want %d", p, len(seen[p]), perPartition)
		}
	}
}

// TestKillRecoveryTime (issue 14): after kill -9 a run's leases stay until
// they expire; the next run drains once they do, and no sooner. Measured
// with a 3 s lease: the time from the kill to the next object.
func TestKillRecoveryTime(t *testing.T) {
	st := newStack(t, 0)
	if err := st.broker.Seed("app", "kill9", 1, 20000); err != nil {
		t.Fatal(err)
	}
	const lease = 3 * time.Second
	env := append(append([]string{}, st.env...), "SINK_TOPICS=kill9", "SINK_LEASE_DURATION="+lease.String(), "SINK_BATCH_LENGTH=100")
	bin := buildPoller(t)
	first := exec.Command(bin, "run", "-interval", "100ms")
	first.Env = append(os.Environ(), env...)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool {
		off, ok := st.broker.GroupOffset("app", "kill9", "iggy-connect-sink-s3", 0)
		return ok && off >= 500
	})
	first.Process.Kill()
	killed := time.Now()
	first.Wait()
	at, _ := st.broker.GroupOffset("app", "kill9", "iggy-connect-sink-s3", 0)
	second := exec.Command(bin, "run", "-interval", "100ms")
	second.Env = append(os.Environ(), env...)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { second.Process.Signal(syscall.SIGTERM); second.Wait() }()
	waitFor(t, lease+15*time.Second, func() bool {
		off, _ := st.broker.GroupOffset("app", "kill9", "iggy-connect-sink-s3", 0)
		return off > at
	})
	took := time.Since(killed)
	t.Logf("after kill -9 the next run wrote again %s later (lease_duration %s)", took.Round(100*time.Millisecond), lease)
	// The lease was renewed at most a third of it before the kill, so it
	// lasted at least two thirds more; and the next run takes the partition
	// over as soon as it expires.
	if took < 2*lease/3 || took > lease+5*time.Second {
		t.Fatalf("recovery took %s with a %s lease", took, lease)
	}
}

// TestSignalDuringStartUp (issue 41): a SIGTERM that arrives while once or
// run is in its start-up checks (here: an S3 that accepts the request and
// never answers) is a stop, logged at info, exit 0; never "start-up check
// failed". A check that runs out of time (a deadline, not a signal) still
// fails.
func TestSignalDuringStartUp(t *testing.T) {
	st := newStack(t, 10)
	bin := buildPoller(t)
	for _, cmdName := range []string{"once", "run"} {
		t.Run(cmdName, func(t *testing.T) {
			endpoint, hit := notifyingStall(t)
			cmd := exec.Command(bin, cmdName, "-log-format", "json")
			cmd.Env = append(append(os.Environ(), st.env...), "SINK_ENDPOINT="+endpoint, "SINK_AWS_REQUEST_TIMEOUT=10m")
			logs := &testenv.LockedBuffer{}
			cmd.Stderr = logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-hit:
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the start-up check never reached S3:\n%s", logs.String())
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("poller %s stopped during its start-up check: %v, want exit 0:\n%s", cmdName, err, logs.String())
			}
			line := lineWith(logs.String(), `"msg":"poller stopped on a signal"`)
			if !strings.Contains(line, `"level":"INFO"`) || !strings.Contains(line, `"during":"the start-up checks"`) {
				t.Fatalf("no info line says it stopped during the start-up checks:\n%s", logs.String())
			}
			if strings.Contains(logs.String(), "start-up check failed") || strings.Contains(logs.String(), `"level":"ERROR"`) {
				t.Fatalf("a stop reported as a failure:\n%s", logs.String())
			}
		})
	}
	t.Run("deadline", func(t *testing.T) {
		endpoint, _ := notifyingStall(t)
		cmd := exec.Command(bin, "once", "-log-format", "json")
		cmd.Env = append(append(os.Environ(), st.env...), "SINK_ENDPOINT="+endpoint, "SINK_AWS_REQUEST_TIMEOUT=300ms", "SINK_MAX_ATTEMPTS=1")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "start-up check failed") {
			t.Fatalf("once against an S3 that never answers: %v, want exit 1 with the failed start-up check:\n%s", err, out)
		}
	})
}

// notifyingStall is an HTTP server that accepts requests and never
// answers, and tells on hit when the first one arrives.
func notifyingStall(t *testing.T) (endpoint string, hit <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	var once atomic.Bool
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if once.CompareAndSwap(false, true) {
			close(ch)
		}
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hold); srv.Close() })
	return srv.URL, ch
}

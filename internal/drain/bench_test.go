package drain_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// benchWorld is a world for benchmarks: the same servers, no test
// bookkeeping; the broker speaks IGGY_TEST_PROTOCOL (default 0.9).
func benchWorld(b testing.TB) (*iggytest.Broker, *testenv.S3, *testenv.Moto) {
	br, err := iggytest.Start(iggytest.WithUser(iggyUser, iggyPassword), iggytest.WithLogger(slog.New(slog.DiscardHandler)), iggytest.WithProtocol(iggyadmin.BrokerProtocol(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	return br, testenv.StartVersity(b), testenv.StartMoto(b)
}

const benchObject = 8 << 20

// BenchmarkDrain measures end-to-end throughput — Iggy broker -> sink ->
// versitygw, 1 KiB JSON messages, json_lines, 8 MiB objects, 64 MiB per run
// into one topic, run after run — in object bytes per second, next to
// BenchmarkPutObject (the same bytes in objects of the same size, to the
// same server) in the same run:
//
//	go test ./internal/drain -run '^$' -bench '^BenchmarkDrain$|^BenchmarkPutObject$' -benchtime 8x
//
// After each run, outside the timer, it also puts 8 such objects one after
// the other to the same server (another bucket), through the same kind of
// uploader as BenchmarkPutObject, and reports drain/put: the drain's bytes
// per second over those PUTs', both measured at the same moments, so that
// the machine's drift between sub-benchmarks does not enter the ratio.
//
// Every run is made by one sink, as a warm Lambda's invocations are, after
// a first run that is not measured (the container's first invocation). It
// reports the CPU time moto_server, versitygw and this process (the sink
// and the broker) spent per run: they share the machine's cores.
// IGGY_TEST_PROTOCOL=0.8 (or 0.10) drains through that protocol's client;
// BENCH_MEMSTATE=1 keeps the state in memory instead of moto_server;
// BENCH_STATE_LATENCY=8ms keeps it in memory behind that round trip per
// call, like DynamoDB seen from Lambda (a store that costs this machine
// no CPU, which moto_server does); BENCH_COLD=1 builds a sink per run, as
// a Lambda container's first invocation does; BENCH_LOG=1 prints the
// runs' logs and when each step of each object came.
func BenchmarkDrain(b *testing.B) {
	for _, parts := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			br, s3srv, moto := benchWorld(b)
			bucket := fmt.Sprintf("bench-%d", parts)
			s3srv.CreateBucket(b, bucket)
			ddb := newDynamoProxy(b, moto.Endpoint, 0) // counts the state writes
			b.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb.url)
			b.Setenv("AWS_ACCESS_KEY_ID", "moto")
			b.Setenv("AWS_SECRET_ACCESS_KEY", "moto-secret")
			// 64 MiB in all (at least one full 8 MiB object per partition),
			// plus a partial object per partition that is left for later.
			perPartition := max(1, 8/parts)*benchObject/1090 + 100
			var bytesOut, msgs, objects uint64
			writes := 0
			var cpu [3]time.Duration // moto_server, versitygw, this process
			var allocated uint64     // bytes allocated during the runs
			b.ResetTimer()
			// One topic for the whole benchmark, fed before every run, so that
			// runs after the first measure the steady state (the partitions'
			// state exists; each run continues where the last stopped).
			if _, err := br.CreateStream("app"); err != nil {
				b.Fatal(err)
			}
			const topic = "t"
			if _, err := br.CreateTopic("app", topic, parts); err != nil {
				b.Fatal(err)
			}
			next := make([]int, parts)
			put := newBarePut(b, s3srv, bucket+"-put")
			var drained, putTime time.Duration
			var putBytes int64
			var remote *remoteState
			if v := os.Getenv("BENCH_STATE_LATENCY"); v != "" {
				d, err := time.ParseDuration(v)
				if err != nil {
					b.Fatalf("BENCH_STATE_LATENCY=%q: %v", v, err)
				}
				remote = &remoteState{StateStore: state.NewMemory(nil), latency: d}
			}
			// A warm Lambda keeps its sink from one invocation to the next
			// (cmd/lambda), and so do the poller's runs; BENCH_COLD=1
			// builds one per run, as a container's first invocation does.
			var steps *stepTimer
			newSink := func() *app.Sink {
				set := map[string]string{
					"IGGY_ADDRESS": br.Addr(), "IGGY_USERNAME": iggyUser, "IGGY_PASSWORD": iggyPassword,
					"SINK_STREAM": "app", "SINK_TOPICS": topic, "SINK_BUCKET": bucket, "SINK_REGION": s3srv.Region,
					"SINK_ENDPOINT": s3srv.Endpoint, "SINK_ACCESS_KEY_ID": s3srv.AccessKey, "SINK_SECRET_ACCESS_KEY": s3srv.SecretKey,
					"SINK_MAX_FILE_SIZE": "8MiB", "SINK_MAX_FILE_AGE": "1h", "SINK_STATE_TABLE": "bench-state",
					"SINK_PARTITION_CONCURRENCY": "4",
				}
				cfg, err := config.Load("", func(k string) (string, bool) { v, ok := set[k]; return v, ok })
				if err != nil {
					b.Fatal(err)
				}
				opts := app.Options{CreateTable: true, Logger: slog.New(slog.DiscardHandler)}
				if os.Getenv("BENCH_LOG") != "" {
					steps = &stepTimer{t0: time.Now()}
					opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
					opts.Hooks = []drain.Hook{steps}
				}
				if os.Getenv("BENCH_MEMSTATE") != "" {
					opts.State = state.NewMemory(nil)
				}
				if remote != nil {
					opts.State = remote
				}
				s, err := app.New(context.Background(), cfg, opts)
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			// Iggy's retention: what is archived leaves the broker, which
			// shares this process's heap (and its collector) with the sink.
			retain := func(sum *drain.Summary) {
				for _, p := range sum.Partitions {
					if p.Committed != nil {
						if err := br.DeleteBelow("app", topic, p.Partition, *p.Committed+1); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			cold := os.Getenv("BENCH_COLD") != ""
			var s *app.Sink
			if !cold {
				// The container's first invocation, not timed: it creates the
				// partitions' state and the markers, and every run after it
				// is a warm one (BENCH_COLD=1 times first invocations).
				b.StopTimer()
				appendRound(b, br, topic, perPartition, next)
				s = newSink()
				sum, err := s.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				retain(sum)
				b.StartTimer()
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				appendRound(b, br, topic, perPartition, next)
				if s == nil || cold {
					s = newSink()
				}
				if steps != nil {
					steps.t0 = time.Now()
				}
				before := ddb.writes()
				cpu0 := [3]time.Duration{procCPU(b, moto.PID), procCPU(b, s3srv.PID), procCPU(b, os.Getpid())}
				var mem0, mem1 runtime.MemStats
				runtime.ReadMemStats(&mem0)
				b.StartTimer()
				start := time.Now()
				sum, err := s.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				drained += time.Since(start)
				b.StopTimer()
				runtime.ReadMemStats(&mem1)
				allocated += mem1.TotalAlloc - mem0.TotalAlloc
				for k, pid := range []int{moto.PID, s3srv.PID, os.Getpid()} {
					cpu[k] += procCPU(b, pid) - cpu0[k]
				}
				writes += ddb.writes() - before
				retain(sum)
				d, n := put.round(b, i)
				putTime += d
				putBytes += n
				b.StartTimer()
				bytesOut += sum.Bytes
				msgs += sum.Messages
				objects += sum.Objects
			}
			b.StopTimer()
			b.SetBytes(int64(bytesOut) / int64(b.N))
			b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
			if os.Getenv("BENCH_MEMSTATE") == "" && remote == nil && objects > 0 {
				b.ReportMetric(float64(writes)/float64(objects), "statewrites/object")
				b.ReportMetric(float64(cpu[0].Milliseconds())/float64(b.N), "moto-cpu-ms/op")
			}
			b.ReportMetric(float64(cpu[1].Milliseconds())/float64(b.N), "s3-cpu-ms/op")
			b.ReportMetric(float64(cpu[2].Milliseconds())/float64(b.N), "self-cpu-ms/op")
			b.ReportMetric(float64(allocated)/float64(b.N)/(1<<20), "alloc-MiB/op")
			putRate := float64(putBytes) / putTime.Seconds()
			b.ReportMetric(putRate/1e6, "put-MB/s")
			b.ReportMetric(float64(bytesOut)/drained.Seconds()/putRate, "drain/put")
		})
	}
}

// BenchmarkPutObject is the reference: plain PutObject of 8 MiB json_lines
// objects to the same kind of server, through the same uploader. An
// iteration puts 8 of them one after the other (64 MiB, a run's worth at
// one partition), so that a few iterations measure long enough to be
// compared with BenchmarkDrain's.
func BenchmarkPutObject(b *testing.B) {
	_, s3srv, _ := benchWorld(b)
	put := newBarePut(b, s3srv, "bench-put")
	b.SetBytes(barePutsPerRound * int64(len(put.body)))
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0 := procCPU(b, s3srv.PID)
		put.round(b, i)
		cpu += procCPU(b, s3srv.PID) - cpu0
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "s3-cpu-ms/op")
}

// barePutsPerRound is how many objects a barePut round puts: 64 MiB, a
// run's worth at one partition.
const barePutsPerRound = 8

// barePut puts 8 MiB json_lines objects one after the other through the
// sink's uploader (its checksum and its create-only PUT), nothing else.
type barePut struct {
	up   *s3store.Uploader
	body []byte
}

func newBarePut(b *testing.B, s3srv *testenv.S3, bucket string) *barePut {
	b.Helper()
	s3srv.CreateBucket(b, bucket)
	client, err := s3store.NewClient(context.Background(), s3store.ClientOptions{Region: s3srv.Region, Endpoint: s3srv.Endpoint, AccessKeyID: s3srv.AccessKey, SecretAccessKey: s3srv.SecretKey})
	if err != nil {
		b.Fatal(err)
	}
	var body bytes.Buffer
	for n := 0; body.Len() < benchObject-1200; n++ {
		body.Write(jsonPayload(0, n, 1024))
		body.WriteByte('\n')
	}
	return &barePut{
		up:   s3store.New(client, s3store.Options{Bucket: bucket, MaxAttempts: 1, MultipartThreshold: 16 << 20, PartSize: 8 << 20}),
		body: body.Bytes(),
	}
}

// round puts barePutsPerRound objects under keys named by round and
// says how long that took and how many bytes went up.
func (p *barePut) round(b *testing.B, round int) (time.Duration, int64) {
	b.Helper()
	start := time.Now()
	for j := range barePutsPerRound {
		if _, err := p.up.Put(context.Background(), s3store.Object{Key: fmt.Sprintf("put/%d-%d.jsonl", round, j)}, p.body); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start), barePutsPerRound * int64(len(p.body))
}

// appendRound appends perPartition 1 KiB JSON messages to each partition
// of app/topic; next[p] numbers partition p's messages across rounds.
func appendRound(b *testing.B, br *iggytest.Broker, topic string, perPartition int, next []int) {
	b.Helper()
	for p := range next {
		for range perPartition {
			if _, err := br.Append("app", topic, uint32(p), jsonPayload(p, next[p], 1024), nil); err != nil {
				b.Fatal(err)
			}
			next[p]++
		}
	}
}

// remoteState is a state store in memory that answers after a round
// trip's latency, and costs no CPU meanwhile.
type remoteState struct {
	drain.StateStore
	latency time.Duration
}

func (r *remoteState) wait() { time.Sleep(r.latency) }

func (r *remoteState) Acquire(ctx context.Context, key state.Key, owner string, ttl time.Duration) (state.State, error) {
	r.wait()
	return r.StateStore.Acquire(ctx, key, owner, ttl)
}

func (r *remoteState) SetIntent(ctx context.Context, s state.State, in state.Intent, ttl time.Duration) (state.State, error) {
	r.wait()
	return r.StateStore.SetIntent(ctx, s, in, ttl)
}

func (r *remoteState) Complete(ctx context.Context, s state.State, d state.Done, ttl time.Duration) (state.State, error) {
	r.wait()
	return r.StateStore.Complete(ctx, s, d, ttl)
}

func (r *remoteState) Renew(ctx context.Context, s state.State, ttl time.Duration) (state.State, error) {
	r.wait()
	return r.StateStore.Renew(ctx, s, ttl)
}

func (r *remoteState) Release(ctx context.Context, s state.State) error {
	r.wait()
	return r.StateStore.Release(ctx, s)
}

func (r *remoteState) Get(ctx context.Context, key state.Key) (state.State, bool, error) {
	r.wait()
	return r.StateStore.Get(ctx, key)
}

// stepTimer prints when each step of each object came, from the run's
// start (BENCH_LOG=1): where a run spends its time.
type stepTimer struct{ t0 time.Time }

func (t *stepTimer) OnStep(s drain.Step, p batch.Partition) error {
	fmt.Fprintf(os.Stderr, "%6.1fms p%d %s\n", float64(time.Since(t.t0).Microseconds())/1000, p.ID, s)
	return nil
}
func (t *stepTimer) OnRunEnd(sum *drain.Summary, err error) {
	fmt.Fprintf(os.Stderr, "%6.1fms end\n", float64(time.Since(t.t0).Microseconds())/1000)
}

// procCPU is the CPU time (user and system) process pid has spent so far,
// from /proc: the servers' share of a run, which the run's wall time hides.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		b.Fatal(err)
	}
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

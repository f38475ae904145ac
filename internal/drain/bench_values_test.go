package drain_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// BenchmarkDrainValues measures what splitting objects by a payload field
// costs: the same messages (1 KiB JSON, a country field of `values`
// distinct values spread evenly, 4 partitions, 32 MiB per run, 8 MiB
// units) drained by a sink whose path template has {payload.country} and,
// in the same iteration, by one whose template has not, each into its own
// topic and bucket on the same servers (versitygw, or MinIO with
// BENCH_S3=minio; the state in memory,
// so that both pay the same for it). It reports split/plain, the split
// sink's bytes per second over the plain one's, measured side by side, and
// objects/op, peak-heap-MiB (the most heap in use, sampled while the split
// sink runs) and the split sink's objects per run:
//
//	go test ./internal/drain -run '^$' -bench '^BenchmarkDrainValues$' -benchtime 5x
//
// The store keeps its files in memory (/dev/shm, where there is one;
// BENCH_DISK=1 keeps them on disk): a value object is a file more for
// the store, and a local disk's cost per file (versitygw on ext4 here:
// about half a millisecond of kernel time to create each, most of its CPU
// beyond the bytes' hashing) would be measured, where the split's cost to
// the sink is what is asked.
func BenchmarkDrainValues(b *testing.B) {
	for _, values := range []int{10, 1000} {
		b.Run(fmt.Sprintf("values-%d", values), func(b *testing.B) {
			storeInMemory(b)
			br, s3srv, _ := benchWorld(b)
			if os.Getenv("BENCH_S3") == "minio" {
				s3srv = testenv.StartMinIO(b)
			}
			const parts = 4
			if _, err := br.CreateStream("app"); err != nil {
				b.Fatal(err)
			}
			sinks := map[string]*app.Sink{}
			var steps *stepTimer // BENCH_LOG=plain or split: when each step of each object came
			for _, kind := range []string{"plain", "split"} {
				if _, err := br.CreateTopic("app", kind, parts); err != nil {
					b.Fatal(err)
				}
				bucket := "bench-values-" + kind
				s3srv.CreateBucket(b, bucket)
				set := map[string]string{
					"IGGY_ADDRESS": br.Addr(), "IGGY_USERNAME": iggyUser, "IGGY_PASSWORD": iggyPassword,
					"SINK_STREAM": "app", "SINK_TOPICS": kind, "SINK_BUCKET": bucket, "SINK_REGION": s3srv.Region,
					"SINK_ENDPOINT": s3srv.Endpoint, "SINK_ACCESS_KEY_ID": s3srv.AccessKey, "SINK_SECRET_ACCESS_KEY": s3srv.SecretKey,
					"SINK_MAX_FILE_SIZE": "8MiB", "SINK_MAX_FILE_AGE": "1h", "SINK_STATE_TABLE": "bench-state",
					"SINK_PARTITION_CONCURRENCY": "4",
				}
				if kind == "split" {
					set["SINK_PATH_TEMPLATE"] = "{stream}/{topic}/country={payload.country}/{date}"
					set["SINK_MAX_PARTITION_VALUES"] = fmt.Sprint(values)
				}
				cfg, err := config.Load("", func(k string) (string, bool) { v, ok := set[k]; return v, ok })
				if err != nil {
					b.Fatal(err)
				}
				opts := app.Options{State: state.NewMemory(nil), Logger: slog.New(slog.DiscardHandler)}
				if os.Getenv("BENCH_LOG") == kind {
					steps = &stepTimer{t0: time.Now()}
					opts.Hooks = []drain.Hook{steps}
				}
				s, err := app.New(context.Background(), cfg, opts)
				if err != nil {
					b.Fatal(err)
				}
				sinks[kind] = s
			}
			perPartition := 2*benchObject/1100 + 50
			next := 0
			feed := func() {
				for p := 0; p < parts; p++ {
					for i := 0; i < perPartition; i++ {
						payload := countryPayload(p, next+i, values)
						for _, kind := range []string{"plain", "split"} {
							if _, err := br.Append("app", kind, uint32(p), payload, nil); err != nil {
								b.Fatal(err)
							}
						}
					}
				}
				next += perPartition
			}
			var took, s3cpu, selfcpu [2]time.Duration
			var bytesOut [2]uint64
			var splitObjects uint64
			var peak atomic.Uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				feed()
				b.StartTimer()
				for k, kind := range []string{"plain", "split"} {
					if only := os.Getenv("BENCH_ONLY"); only != "" && only != kind {
						continue // profiling one of them (the ratios are then meaningless)
					}
					done := make(chan struct{})
					if kind == "split" {
						go samplePeak(done, &peak)
					}
					cpu0, self0 := procCPU(b, s3srv.PID), procCPU(b, os.Getpid())
					start := time.Now()
					if steps != nil {
						steps.t0 = start
					}
					sum, err := sinks[kind].Run(context.Background())
					took[k] += time.Since(start)
					s3cpu[k] += procCPU(b, s3srv.PID) - cpu0
					selfcpu[k] += procCPU(b, os.Getpid()) - self0
					close(done)
					if err != nil {
						b.Fatal(err)
					}
					bytesOut[k] += sum.Bytes
					if kind == "split" {
						splitObjects += sum.Objects
					}
					b.StopTimer()
					for _, p := range sum.Partitions {
						if p.Committed != nil {
							if err := br.DeleteBelow("app", kind, p.Partition, *p.Committed+1); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.StartTimer()
				}
			}
			b.StopTimer()
			rate := func(k int) float64 { return float64(bytesOut[k]) / took[k].Seconds() }
			b.SetBytes(int64(bytesOut[1]) / int64(b.N))
			b.ReportMetric(rate(1)/rate(0), "split/plain")
			b.ReportMetric(rate(0)/1e6, "plain-MB/s")
			b.ReportMetric(float64(splitObjects)/float64(b.N), "units/op")
			b.ReportMetric(s3cpu[1].Seconds()/s3cpu[0].Seconds(), "s3cpu-split/plain")
			b.ReportMetric(selfcpu[1].Seconds()/selfcpu[0].Seconds(), "selfcpu-split/plain")
			// How busy the two processes kept the machine's cores during
			// each sink's runs (CPU seconds per wall second).
			b.ReportMetric((s3cpu[0]+selfcpu[0]).Seconds()/took[0].Seconds(), "cores-plain")
			b.ReportMetric((s3cpu[1]+selfcpu[1]).Seconds()/took[1].Seconds(), "cores-split")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		})
	}
}

// storeInMemory has the stores the benchmark starts keep their files in
// memory, unless BENCH_DISK=1 or the machine has no /dev/shm.
func storeInMemory(b *testing.B) {
	if os.Getenv("BENCH_DISK") == "1" {
		return
	}
	if fi, err := os.Stat("/dev/shm"); err != nil || !fi.IsDir() {
		return
	}
	dir, err := os.MkdirTemp("/dev/shm", "bench-store-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	b.Setenv("TMPDIR", dir) // the stores' roots are test temp dirs
}

// countryPayload is jsonPayload's 1 KiB message with a country field, one
// of values, in turn.
func countryPayload(p, n, values int) []byte {
	b := jsonPayload(p, n, 1024-20)
	return append(fmt.Appendf(nil, `{"country":"c%d",`, n%values), b[1:]...)
}

// samplePeak records the most heap in use until done is closed.
func samplePeak(done <-chan struct{}, peak *atomic.Uint64) {
	var ms runtime.MemStats
	for {
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak.Load() {
			peak.Store(ms.HeapInuse)
		}
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

package drain_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// tablesResult keeps what each run's registration did (an sinktables.Hook).
type tablesResult struct {
	commits, conflicts, files int
	latency                   time.Duration
	err                       error
}

func (r *tablesResult) OnTables(res icetable.Result, err error) {
	r.commits += res.Commits
	r.conflicts += res.Conflicts
	r.files += res.Files
	r.latency += res.Latency
	if err != nil {
		r.err = err
	}
}

// BenchmarkIcebergDrain measures the drain with Parquet objects into
// versitygw, 4 partitions, 1 KiB JSON messages, 8 MiB objects, 32 MiB per
// run (BENCH_RUN_MIB sets it), state in memory: without tables, and with every object registered in
// an Iceberg table on Apache Iceberg's REST catalog and on Glue (moto), in
// object bytes per second, in one run for the ratio:
//
//	go test ./internal/drain -run '^$' -bench IcebergDrain -benchtime 4x
//
// commits/run and commit-ms/run are the registration's.
func BenchmarkIcebergDrain(b *testing.B) {
	for _, catalog := range []string{"none", "rest", "glue"} {
		b.Run("tables-"+catalog, func(b *testing.B) {
			if catalog != "none" && !testenv.IcebergAvailable(b) {
				b.Skip("the Iceberg tools are not installed (make iceberg-tools)")
			}
			br, s3srv, moto := benchWorld(b)
			s3srv.CreateBucket(b, "bench")
			const parts, topic = 4, "t"
			if _, err := br.CreateStream("app"); err != nil {
				b.Fatal(err)
			}
			if _, err := br.CreateTopic("app", topic, parts); err != nil {
				b.Fatal(err)
			}
			set := map[string]string{
				"IGGY_ADDRESS": br.Addr(), "IGGY_USERNAME": iggyUser, "IGGY_PASSWORD": iggyPassword,
				"SINK_STREAM": "app", "SINK_TOPICS": topic, "SINK_BUCKET": "bench", "SINK_PREFIX": "p", "SINK_REGION": s3srv.Region,
				"SINK_ENDPOINT": s3srv.Endpoint, "SINK_ACCESS_KEY_ID": s3srv.AccessKey, "SINK_SECRET_ACCESS_KEY": s3srv.SecretKey,
				"SINK_OUTPUT_FORMAT": "parquet", "SINK_COMPRESSION": "none",
				"SINK_MAX_FILE_SIZE": "8MiB", "SINK_MAX_FILE_AGE": "1h", "SINK_PARTITION_CONCURRENCY": "4",
			}
			switch catalog {
			case "rest":
				rest := testenv.StartIcebergREST(b, s3srv, "s3://bench/p/_iceberg")
				set["SINK_TABLE_FORMAT"], set["SINK_ICEBERG_CATALOG"], set["SINK_ICEBERG_CATALOG_URI"] = "iceberg", "rest", rest.Endpoint
			case "glue":
				set["SINK_TABLE_FORMAT"], set["SINK_ICEBERG_CATALOG"] = "iceberg", "glue"
				b.Setenv("AWS_ENDPOINT_URL_GLUE", moto.Endpoint)
				b.Setenv("AWS_ACCESS_KEY_ID", "moto")
				b.Setenv("AWS_SECRET_ACCESS_KEY", "moto-secret")
			}
			cfg, err := config.Load("", func(k string) (string, bool) { v, ok := set[k]; return v, ok })
			if err != nil {
				b.Fatal(err)
			}
			tables := &tablesResult{}
			s, err := app.New(context.Background(), cfg, app.Options{State: state.NewMemory(nil), Logger: benchLogger(), Hooks: []drain.Hook{tables}})
			if err != nil {
				b.Fatal(err)
			}
			runMiB := 32
			if v := os.Getenv("BENCH_RUN_MIB"); v != "" {
				if runMiB, err = strconv.Atoi(v); err != nil || runMiB < 1 {
					b.Fatalf("BENCH_RUN_MIB=%q: want a whole number of MiB", v)
				}
			}
			perPartition := runMiB << 20 / parts / 1090
			next := make([]int, parts)
			var bytesOut, objects uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				appendRound(b, br, topic, perPartition, next)
				b.StartTimer()
				sum, err := s.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				bytesOut += sum.Bytes
				objects += uint64(sum.Objects)
				if os.Getenv("BENCH_LOG") != "" {
					b.Logf("run %d: %d objects, %d bytes; tables so far %+v", i, sum.Objects, sum.Bytes, *tables)
				}
			}
			b.StopTimer()
			if tables.err != nil {
				b.Fatal(tables.err)
			}
			b.SetBytes(int64(bytesOut) / int64(b.N))
			if catalog != "none" {
				if objects > 0 && tables.files == 0 {
					b.Fatalf("%d objects archived, none registered", objects)
				}
				b.ReportMetric(float64(tables.commits)/float64(b.N), "commits/run")
				b.ReportMetric(float64(tables.latency.Milliseconds())/float64(b.N), "commit-ms/run")
				b.ReportMetric(float64(tables.files)/float64(b.N), "files/run")
			}
		})
	}
}

// benchLogger discards the runs' logs, or shows them (info and up, JSON)
// with BENCH_LOG=1, with each run's objects.
func benchLogger() *slog.Logger {
	if os.Getenv("BENCH_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

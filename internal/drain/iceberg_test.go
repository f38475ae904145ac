package drain_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// icebergWorld is a world's Iceberg REST catalog (Apache Iceberg's own
// fixture, on the world's S3), started by the first test that asks.
type icebergWorld struct {
	// t is the world's own test: the catalog lives as long as the world,
	// not the subtest that first asks for it.
	t    *testing.T
	once sync.Once
	rest *testenv.IcebergREST
	ok   bool
}

// icebergReady reports whether the world's S3 can carry Iceberg tables
// here (a real S3 server and the installed tools; the in-process S3 is
// left out), starting the catalog once.
func (w *world) icebergReady() bool {
	if w.backend == "inproc" || w.ice == nil {
		return false
	}
	w.ice.once.Do(func() {
		if !testenv.IcebergAvailable(w.t) {
			return
		}
		w.s3.CreateBucket(w.t, "iceberg-warehouse")
		w.ice.rest = testenv.StartIcebergREST(w.ice.t, w.s3, "s3://iceberg-warehouse/tables")
		w.ice.ok = true
	})
	return w.ice.ok
}

// withIceberg turns table_format = "iceberg" on in set, on the world's
// REST catalog; false when the world cannot carry tables.
func (w *world) withIceberg(set map[string]string) bool {
	if !w.icebergReady() {
		return false
	}
	set["SINK_OUTPUT_FORMAT"] = "parquet"
	set["SINK_COMPRESSION"] = "none"
	set["SINK_TABLE_FORMAT"] = "iceberg"
	set["SINK_ICEBERG_CATALOG"] = "rest"
	set["SINK_ICEBERG_CATALOG_URI"] = w.ice.rest.Endpoint
	return true
}

// tablesClean holds the sink's tables to the archive (see
// icetable.Registrar.Check), and each partition's registered range to the
// end of what the audit found archived.
func (w *world) tablesClean(s *app.Sink, reports []audit.Report) {
	w.t.Helper()
	tables, err := s.AuditTables(context.Background(), reports)
	if err != nil {
		w.t.Fatalf("table audit: %v", err)
	}
	var buf bytes.Buffer
	_ = audit.WriteTables(&buf, tables)
	for _, tr := range tables {
		behind := false
		for _, n := range tr.Notes {
			behind = behind || strings.HasPrefix(n, "behind:")
		}
		// The tests audit after the last run registered everything.
		if !tr.OK() || behind {
			w.t.Fatalf("table audit:\n%s", buf.String())
		}
		w.t.Logf("table %s: %d data files, %d partitions registered, each archived object once", tr.Table, tr.Files, tr.Partitions)
	}
}

// tablesBehind reports whether a table is behind what the state records
// archived: a run that held a partition's lease died or stalled before it
// registered, and no run has taken the partition since (the next does).
func (w *world) tablesBehind(s *app.Sink) bool {
	w.t.Helper()
	reports, err := ops.NewAuditor(s, slog.New(slog.DiscardHandler)).Audit(context.Background(), ops.AuditOptions{})
	if err != nil {
		w.t.Fatalf("audit: %v", err)
	}
	tables, err := s.AuditTables(context.Background(), reports)
	if err != nil {
		w.t.Fatalf("table audit: %v", err)
	}
	for _, tr := range tables {
		for _, n := range tr.Notes {
			if strings.HasPrefix(n, "behind:") {
				return true
			}
		}
	}
	return false
}

// checkIceberg reads topic's table with pyiceberg, an independent reader:
// every message produced is one row, at its partition and offset, with
// its payload's values.
func (w *world) checkIceberg(s *app.Sink, topic string) {
	w.t.Helper()
	name := icetable.TableName(s.Config.Plugin.IcebergTable, w.stream, topic)
	tbl := w.scanIceberg(s, topic, "partition_id,offset,partition,n,path", "")
	parts := w.sent(topic)
	seen := map[string]int{}
	for _, r := range tbl.Rows {
		key := fmt.Sprint(r[0], "/", r[1])
		if fmt.Sprint(r[2]) != fmt.Sprint(r[0]) || fmt.Sprint(r[3]) != fmt.Sprint(r[1]) || fmt.Sprint(r[4]) != "/api/items/"+fmt.Sprint(r[1]) {
			w.t.Fatalf("table %s: row %v does not hold the payload of partition %v offset %v", name, r, r[0], r[1])
		}
		seen[key]++
	}
	total := 0
	for p := range parts {
		for off := range parts[p] {
			if c := seen[fmt.Sprint(p, "/", off)]; c != 1 {
				w.t.Fatalf("table %s: partition %d offset %d is in it %d times", name, p, off, c)
			}
			total++
		}
	}
	if len(tbl.Rows) != total {
		w.t.Fatalf("table %s: %d rows, produced %d", name, len(tbl.Rows), total)
	}
	w.t.Logf("table %s: every one of %d messages once, read by pyiceberg", name, total)
}

// modelLake is the Iceberg catalog the model test's schedules share: a
// REST catalog whose table files (metadata, manifests) are in a versitygw
// of their own, each seed in a namespace of its own, while each seed's
// data objects stay in its in-process S3 with its faults.
type modelLake struct {
	s3   *testenv.S3
	rest *testenv.IcebergREST
}

// startModelLake starts the model's catalog, or returns nil when the tools
// are not installed (never in CI).
func startModelLake(t *testing.T) *modelLake {
	if !testenv.IcebergAvailable(t) {
		return nil
	}
	s := testenv.StartVersity(t)
	s.CreateBucket(t, "model-tables")
	return &modelLake{s3: s, rest: testenv.StartIcebergREST(t, s, "s3://model-tables/t")}
}

// catalog is a client of the lake whose table files go to its versitygw.
func (l *modelLake) catalog(t *testing.T) icetable.Catalog {
	t.Helper()
	files := icetable.FileStore{Endpoint: l.s3.Endpoint, Region: l.s3.Region, PathStyle: true, AccessKeyID: l.s3.AccessKey, SecretAccessKey: l.s3.SecretKey}
	c, err := rest.NewCatalog(context.Background(), "model", l.rest.Endpoint, rest.WithAdditionalProps(files.Props()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

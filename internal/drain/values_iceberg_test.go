package drain_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// icebergScan is what scripts/iceberg_read.py prints of a table.
type icebergScan struct {
	Error          string   `json:"error"`
	Rows           [][]any  `json:"rows"`
	Planned        []string `json:"planned_files"`
	DataFiles      []string `json:"data_files"`
	FilePartitions []struct {
		Path      string `json:"path"`
		Partition []any  `json:"partition"`
	} `json:"file_partitions"`
	Spec []struct {
		Name, Transform, Source string
	} `json:"spec"`
}

// scanIceberg reads topic's table with pyiceberg, through filter ("" for
// every row), selecting columns.
func (w *world) scanIceberg(s *app.Sink, topic, columns, filter string) icebergScan {
	w.t.Helper()
	name := icetable.TableName(s.Config.Plugin.IcebergTable, w.stream, topic)
	args := []string{filepath.Join(testenv.RepoRoot(w.t), "scripts", "iceberg_read.py"),
		"--catalog", "rest", "--uri", w.ice.rest.Endpoint, "--s3-endpoint", w.s3.Endpoint, "--s3-access-key", w.s3.AccessKey,
		"--s3-secret-key", w.s3.SecretKey, "--region", w.s3.Region, "--namespace", s.Config.Plugin.IcebergNamespace, "--table", name,
		"--columns", columns}
	if filter != "" {
		args = append(args, "--filter", filter)
	}
	cmd := exec.Command(testenv.PyIceberg(w.t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	var scan icebergScan
	d := json.NewDecoder(&out)
	d.UseNumber()
	if err := d.Decode(&scan); err != nil || scan.Error != "" {
		w.t.Fatalf("pyiceberg: %v %s\n%s", err, scan.Error, errb.String())
	}
	return scan
}

// TestValueTables drains Parquet split by {payload.country} into an
// Iceberg table and reads it with pyiceberg: the spec has an identity
// field on country after the time transform; every message is a row once;
// each data file lies in exactly one partition, the one its folder names;
// and a scan filtered on one country plans only that country's files and
// reads only its rows. The table audit is clean.
func TestValueTables(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		if !w.icebergReady() {
			t.Skip("needs a real S3 server and the Iceberg tools")
		}
		topic := "values-table"
		want := w.produceValues(topic, 2, 90, 9, rand.New(rand.NewPCG(4, 4))) // strings, none, null, ""
		set := valueSettings(w, topic, topic, "parquet")
		w.withIceberg(set)
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, topic, 20)
		// A second round: the table's next commit registers what the run
		// wrote (several units per partition), not the archive's listing.
		more := w.produceValues(topic, 2, 90, 9, rand.New(rand.NewPCG(5, 5)))
		for p := range want {
			want[p] = append(want[p], more[p]...)
		}
		w.drainUntilQuiet(s, topic, 20)
		w.auditClean(s)
		scan := w.scanIceberg(s, topic, "partition_id,offset,country", "")
		var spec []string
		for _, f := range scan.Spec {
			spec = append(spec, f.Transform+"("+f.Source+")")
		}
		if len(spec) != 2 || spec[1] != "identity(country)" || !strings.HasPrefix(spec[0], "day(") && !strings.HasPrefix(spec[0], "hour(") {
			t.Fatalf("partition spec %v, want the time transform then identity(country)", spec)
		}
		seen := map[string]int{}
		for _, r := range scan.Rows {
			seen[fmt.Sprint(r[0], "/", r[1])]++
		}
		total := 0
		for p := range want {
			for off := range want[p] {
				if n := seen[fmt.Sprint(p, "/", off)]; n != 1 {
					t.Fatalf("partition %d offset %d is in the table %d times", p, off, n)
				}
				total++
			}
		}
		if len(scan.Rows) != total {
			t.Fatalf("the table has %d rows, %d messages were produced", len(scan.Rows), total)
		}
		for _, f := range scan.FilePartitions {
			value := fmt.Sprint(f.Partition[len(f.Partition)-1])
			if !strings.Contains(f.Path, "/country="+escapedSegment(value)+"/") {
				t.Fatalf("%s is in the partition country=%q, which is not its folder", f.Path, value)
			}
		}
		de := w.scanIceberg(s, topic, "partition_id,offset,country", "country == 'DE'")
		if len(de.Planned) == 0 || len(de.Planned) >= len(de.DataFiles) {
			t.Fatalf("a scan of country DE plans %d of the %d files", len(de.Planned), len(de.DataFiles))
		}
		for _, f := range de.Planned {
			if !strings.Contains(f, "/country=DE/") {
				t.Fatalf("a scan of country DE plans %s", f)
			}
		}
		wantDE := 0
		for p := range want {
			for _, seg := range want[p] {
				if seg == "DE" {
					wantDE++
				}
			}
		}
		if len(de.Rows) != wantDE {
			t.Fatalf("a scan of country DE reads %d rows, %d messages carry it", len(de.Rows), wantDE)
		}
		t.Logf("%d rows in %d files; country DE: %d rows in %d files", len(scan.Rows), len(scan.DataFiles), len(de.Rows), len(de.Planned))
	})
}

// escapedSegment is a value's folder segment, for the test's plain values.
func escapedSegment(v string) string {
	switch v {
	case "<nil>", "None", "":
		return "__HIVE_DEFAULT_PARTITION__"
	case "São Paulo":
		return "S%C3%A3o%20Paulo"
	case "a/../b":
		return "a%2F..%2Fb"
	case "_errors":
		return "%5Ferrors"
	}
	return v
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// icebergTable is what pyiceberg, an independent reader, makes of a table.
type icebergTable struct {
	Error     string            `json:"error"`
	Columns   []string          `json:"columns"`
	Rows      [][]any           `json:"rows"`
	Snapshots []icebergSnapshot `json:"snapshots"`
	Props     map[string]string `json:"properties"`
	DataFiles []string          `json:"data_files"`
	// FilePartitions are each data file's spec and partition value.
	FilePartitions []struct {
		Path      string `json:"path"`
		SpecID    int    `json:"spec_id"`
		Partition []any  `json:"partition"`
	} `json:"file_partitions"`
}

type icebergSnapshot struct {
	ID        int64             `json:"id"`
	Operation string            `json:"operation"`
	Summary   map[string]string `json:"summary"`
}

// readIceberg loads a table through the catalog with pyiceberg and scans it.
func readIceberg(t *testing.T, env map[string]string, columns string) icebergTable {
	t.Helper()
	py := testenv.PyIceberg(t)
	cmd := exec.Command(py, filepath.Join(testenv.RepoRoot(t), "scripts", "iceberg_read.py"), "--columns", columns)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, "ICEBERG_READ_"+k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var tbl icebergTable
	d := json.NewDecoder(&out)
	d.UseNumber()
	if derr := d.Decode(&tbl); derr != nil {
		t.Fatalf("pyiceberg: %v (%v)\n%s", derr, err, errb.String())
	}
	if tbl.Error != "" {
		t.Fatalf("pyiceberg: %s\n%s", tbl.Error, errb.String())
	}
	return tbl
}

// icebergPayload is the payload of message off of partition p: the table
// must give back exactly these values in the row of (p, off).
func icebergPayload(p uint32, off uint64) []byte {
	return fmt.Appendf(nil, `{"k":"%d-%d","n":%d}`, p, off, off*7+uint64(p))
}

// produce appends n messages to each of the topic's partitions.
func produce(t *testing.T, st *stack, topic string, partitions uint32, n int) {
	t.Helper()
	for p := uint32(0); p < partitions; p++ {
		off := uint64(0)
		if h, ok := st.broker.HighOffset("app", topic, p); ok {
			off = h + 1
		}
		for range n {
			got, err := st.broker.Append("app", topic, p, icebergPayload(p, off), nil)
			if err != nil || got != off {
				t.Fatalf("append to partition %d: offset %d, want %d (%v)", p, got, off, err)
			}
			off++
		}
	}
}

// TestIcebergKillNine (issue 22's acceptance): `poller run` into an Iceberg
// table on Glue (moto) and on Apache Iceberg's REST catalog, 4 partitions,
// killed with SIGKILL mid-run three times; then pyiceberg reads every
// message exactly once with its values, the snapshot summaries hold every
// partition's range, and `poller audit` is clean.
func TestIcebergKillNine(t *testing.T) {
	for _, catalog := range []string{"glue", "rest"} {
		t.Run(catalog, func(t *testing.T) {
			testIcebergKillNine(t, catalog)
		})
	}
}

func testIcebergKillNine(t *testing.T, catalog string) {
	testenv.PyIceberg(t)
	st := newStack(t, 0)
	const topic, partitions = "ice", 4
	if _, err := st.broker.CreateTopic("app", topic, partitions); err != nil {
		t.Fatal(err)
	}
	env := append(append([]string{}, st.env...), "SINK_TOPICS="+topic, "SINK_OUTPUT_FORMAT=parquet", "SINK_COMPRESSION=none",
		"SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=300", "SINK_LEASE_DURATION=2s", "SINK_BATCH_LENGTH=100",
		"SINK_TABLE_FORMAT=iceberg", "SINK_ICEBERG_CATALOG="+catalog)
	reader := map[string]string{"CATALOG": catalog, "S3_ENDPOINT": st.s3.Endpoint, "S3_ACCESS_KEY": st.s3.AccessKey,
		"S3_SECRET_KEY": st.s3.SecretKey, "NAMESPACE": "iggy", "TABLE": "app_" + topic}
	switch catalog {
	case "glue":
		env = append(env, "AWS_ENDPOINT_URL_GLUE="+st.moto.Endpoint)
		reader["GLUE_ENDPOINT"] = st.moto.Endpoint
	case "rest":
		rest := testenv.StartIcebergREST(t, st.s3, "s3://poller/p/_iceberg")
		env = append(env, "SINK_ICEBERG_CATALOG_URI="+rest.Endpoint)
		reader["URI"] = rest.Endpoint
	}
	bin := buildPoller(t)
	rng := rand.New(rand.NewPCG(22, 22))
	const kills, perRound = 3, 1500
	for i := 0; i < kills; i++ {
		produce(t, st, topic, partitions, perRound)
		run := exec.Command(bin, "run", "-interval", "100ms", "-log-format", "json")
		run.Env = append(os.Environ(), env...)
		logs := &testenv.LockedBuffer{}
		run.Stderr = logs
		if err := run.Start(); err != nil {
			t.Fatal(err)
		}
		wait := time.Duration(300+rng.IntN(1500)) * time.Millisecond
		time.Sleep(wait)
		run.Process.Kill()
		run.Wait()
		t.Logf("kill %d after %s: %d iceberg commits logged before it", i, wait, strings.Count(logs.String(), `"iceberg commit"`))
		if strings.Contains(logs.String(), `"level":"ERROR"`) {
			t.Fatalf("errors before kill %d:\n%s", i, logs.String())
		}
	}
	time.Sleep(2500 * time.Millisecond) // the killed run's leases lapse
	drainAll(t, bin, env)

	tbl := readIceberg(t, reader, "partition_id,offset,k,n")
	seen := map[[2]uint64]int{}
	for _, r := range tbl.Rows {
		p, _ := r[0].(json.Number).Int64()
		off, _ := r[1].(json.Number).Int64()
		n, _ := r[3].(json.Number).Int64()
		want := fmt.Sprintf(`{"k":"%v","n":%d}`, r[2], n)
		if got := string(icebergPayload(uint32(p), uint64(off))); got != want {
			t.Fatalf("row (%d, %d) holds %s, produced %s", p, off, want, got)
		}
		seen[[2]uint64{uint64(p), uint64(off)}]++
	}
	for p := uint64(0); p < partitions; p++ {
		for off := uint64(0); off < kills*perRound; off++ {
			if c := seen[[2]uint64{p, off}]; c != 1 {
				t.Fatalf("partition %d offset %d is in the table %d times", p, off, c)
			}
		}
	}
	if len(tbl.Rows) != partitions*kills*perRound {
		t.Fatalf("the table holds %d rows, want %d", len(tbl.Rows), partitions*kills*perRound)
	}
	// The last snapshot's summary and the table property hold every
	// partition's range, up to its last offset.
	last := tbl.Snapshots[len(tbl.Snapshots)-1]
	for _, got := range []string{last.Summary[icetable.RangesProperty], tbl.Props[icetable.RangesProperty]} {
		r, err := icetable.ParseRanges(got)
		if err != nil {
			t.Fatal(err)
		}
		for p := uint32(0); p < partitions; p++ {
			if pos := r[icetable.PartitionID{Stream: "app", Topic: topic, Partition: p}]; pos.Last != kills*perRound-1 {
				t.Fatalf("ranges %s: partition %d at %+v, want last offset %d", got, p, pos, kills*perRound-1)
			}
		}
	}
	seenFile := map[string]bool{}
	for _, f := range tbl.DataFiles {
		if seenFile[f] || !strings.HasPrefix(f, "s3://poller/p/app/"+topic+"/") {
			t.Fatalf("data file %s: twice, or outside the archive", f)
		}
		seenFile[f] = true
	}
	// The default path template names the hour: every object lies in one
	// hour, and is registered with it as its partition value.
	for _, f := range tbl.FilePartitions {
		if len(f.Partition) != 1 || f.Partition[0] == nil {
			t.Fatalf("data file %s has partition %v (spec %d), want its hour", f.Path, f.Partition, f.SpecID)
		}
	}
	t.Logf("%s: %d rows, %d data files, %d snapshots", catalog, len(tbl.Rows), len(tbl.DataFiles), len(tbl.Snapshots))
	audit := exec.Command(bin, "audit")
	audit.Env = append(os.Environ(), env...)
	out, err := audit.CombinedOutput()
	// 60 objects, more when the run crosses an hour (objects end there).
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("ok   table iggy.app_%s: %d data files, 4 partitions registered", topic, len(tbl.DataFiles))) || len(tbl.DataFiles) < 60 {
		t.Fatalf("audit: %v\n%s", err, out)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// restTableStack is a stack whose topic app/<topic> goes into a table on
// Apache Iceberg's REST catalog, 50 messages per Parquet object: the
// poller's environment and pyiceberg's (readIceberg).
func restTableStack(t *testing.T, topic string, partitions int) (*stack, []string, map[string]string) {
	t.Helper()
	testenv.PyIceberg(t)
	st := newStack(t, 0)
	if _, err := st.broker.CreateTopic("app", topic, partitions); err != nil {
		t.Fatal(err)
	}
	rest := testenv.StartIcebergREST(t, st.s3, "s3://poller/p/_iceberg")
	env := append(append([]string{}, st.env...), "SINK_TOPICS="+topic, "SINK_OUTPUT_FORMAT=parquet", "SINK_COMPRESSION=none",
		"SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=50", "SINK_TABLE_FORMAT=iceberg", "SINK_ICEBERG_CATALOG=rest",
		"SINK_ICEBERG_CATALOG_URI="+rest.Endpoint)
	reader := map[string]string{"CATALOG": "rest", "URI": rest.Endpoint, "S3_ENDPOINT": st.s3.Endpoint, "S3_ACCESS_KEY": st.s3.AccessKey,
		"S3_SECRET_KEY": st.s3.SecretKey, "NAMESPACE": "iggy", "TABLE": "app_" + topic}
	return st, env, reader
}

// TestIcebergTypeChangeGoesToTheErrorObject (issue 22): after the table
// has n as a long, messages whose n has a fraction go to the error object,
// not into a file the table cannot take; and a new column two partitions
// bring with different types in one run takes the type of the first, the
// other partition's values that do not fit going to the error object.
// Every message is then in the table or in an error object, exactly
// once, pyiceberg reads the rest with their values, and the audit is clean.
func TestIcebergTypeChangeGoesToTheErrorObject(t *testing.T) {
	const topic, partitions = "types", 2
	st, env, reader := restTableStack(t, topic, partitions)
	produced := map[[2]uint64]string{}
	appendAll := func(p uint32, payloads []string) {
		for _, pl := range payloads {
			off, err := st.broker.Append("app", topic, p, []byte(pl), nil)
			if err != nil {
				t.Fatal(err)
			}
			produced[[2]uint64{uint64(p), off}] = pl
		}
	}
	var round1, frac, tagInt []string
	for i := range 100 {
		round1 = append(round1, fmt.Sprintf(`{"n":%d}`, i))
		n := fmt.Sprint(i)
		if i%3 == 0 {
			n += ".25"
		}
		frac = append(frac, fmt.Sprintf(`{"n":%s,"tag":"t%d"}`, n, i))
		tagInt = append(tagInt, fmt.Sprintf(`{"n":%d,"tag":%d}`, i, i))
	}
	appendAll(0, round1)
	appendAll(1, round1)
	bin := buildPoller(t)
	drainAll(t, bin, env)
	// Round 2, one run: partition 0 brings n with fractions and tag as a
	// string, partition 1 tag as a long.
	appendAll(0, frac)
	appendAll(1, tagInt)
	drainAll(t, bin, env)

	tbl := readIceberg(t, reader, "partition_id,offset,n,tag")
	seen := map[[2]uint64]int{}
	tagKinds := map[string]bool{}
	for _, r := range tbl.Rows {
		p, _ := r[0].(json.Number).Int64()
		off, _ := r[1].(json.Number).Int64()
		k := [2]uint64{uint64(p), uint64(off)}
		seen[k]++
		var want map[string]any
		d := json.NewDecoder(strings.NewReader(produced[k]))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatalf("row %v: no such message", k)
		}
		if fmt.Sprint(r[2]) != fmt.Sprint(want["n"]) {
			t.Fatalf("row %v: n %v, produced %s", k, r[2], produced[k])
		}
		if r[3] != nil {
			_, isNum := r[3].(json.Number)
			tagKinds[fmt.Sprint(isNum)] = true
			if fmt.Sprint(r[3]) != strings.Trim(fmt.Sprint(want["tag"]), `"`) {
				t.Fatalf("row %v: tag %v, produced %s", k, r[3], produced[k])
			}
		}
	}
	if len(tagKinds) != 1 {
		t.Fatalf("the table's tag column holds strings and numbers: %v", tagKinds)
	}
	// The error objects hold the rest.
	cl := st.s3.Client(t)
	list, err := cl.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("poller"), Prefix: aws.String("p/_errors/")})
	if err != nil {
		t.Fatal(err)
	}
	rejected := 0
	for _, o := range list.Contents {
		obj, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("poller"), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		body.ReadFrom(obj.Body)
		obj.Body.Close()
		sc := bufio.NewScanner(&body)
		for sc.Scan() {
			if len(sc.Bytes()) == 0 {
				continue
			}
			var line struct {
				Offset    uint64 `json:"offset"`
				Partition uint64 `json:"partition_id"`
				Reason    string `json:"reason"`
				Payload   string `json:"payload"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("%s: %v", *o.Key, err)
			}
			k := [2]uint64{line.Partition, line.Offset}
			if line.Payload != produced[k] || !strings.Contains(line.Reason, "want") {
				t.Fatalf("error line %s: payload %q, produced %q", sc.Bytes(), line.Payload, produced[k])
			}
			seen[k]++
			rejected++
		}
	}
	for k := range produced {
		if seen[k] != 1 {
			t.Fatalf("message %v is in the table or an error object %d times", k, seen[k])
		}
	}
	// At least the fractions (n is a long since round 1) were rejected.
	if rejected < 34 {
		t.Fatalf("%d records in error objects, want at least the 34 with a fraction", rejected)
	}
	t.Logf("%d rows in the table, %d records in error objects; tag numeric: %v", len(tbl.Rows), rejected, tagKinds)
	audit := exec.Command(bin, "audit")
	audit.Env = append(os.Environ(), env...)
	if out, err := audit.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok   table iggy.app_"+topic) {
		t.Fatalf("audit: %v\n%s", err, out)
	}
}

// TestIcebergObjectOfNoRows: an object whose every record goes to the
// error object is a Parquet file of no rows; it is registered like any
// other, and the audit, which reads the table's manifests (a scan passes
// over such files), finds it there: clean. Found in CI, where the run
// order of TestIcebergTypeChangeGoesToTheErrorObject made one.
func TestIcebergObjectOfNoRows(t *testing.T) {
	const topic = "norows"
	st, env, reader := restTableStack(t, topic, 1)
	bin := buildPoller(t)
	for round, format := range []string{`{"n":%d}`, `{"n":"s%d"}`} { // then n as strings: every record rejected
		for i := range 50 {
			if _, err := st.broker.Append("app", topic, 0, fmt.Appendf(nil, format, i), nil); err != nil {
				t.Fatal(err)
			}
		}
		drainAll(t, bin, env)
		t.Logf("round %d drained", round)
	}
	tbl := readIceberg(t, reader, "offset,n")
	if len(tbl.Rows) != 50 {
		t.Fatalf("the table holds %d rows, want the first round's 50", len(tbl.Rows))
	}
	audit := exec.Command(bin, "audit")
	audit.Env = append(os.Environ(), env...)
	if out, err := audit.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok   table iggy.app_"+topic+": 2 data files, 1 partitions registered") {
		t.Fatalf("audit: %v\n%s", err, out)
	}
}

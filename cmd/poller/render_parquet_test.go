package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/parquetread"
)

// TestRenderParquet: `poller render` writes the Parquet object the sink
// would write; pyarrow and DuckDB read the same rows from it (checked in as
// what pyarrow reads). Under invalid_payload = "error_object", -errors
// FILE receives the error object and stderr names its key.
func TestRenderParquet(t *testing.T) {
	parquetread.Available(t)
	input, err := os.ReadFile(filepath.Join("testdata", "render", "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, invalid string
	}{{"parquet", "base64"}, {"parquet_error_object", "error_object"}} {
		t.Run(tc.name, func(t *testing.T) {
			setEnv(t, map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "app", "SINK_TOPICS": "logs",
				"SINK_OUTPUT_FORMAT": "parquet", "SINK_PREFIX": "iggy", "SINK_INVALID_PAYLOAD": tc.invalid})
			errFile := filepath.Join(t.TempDir(), "errors.jsonl")
			args := []string{"render", "-time", "2024-03-16T14:02:31Z", "-partition", "3", "-offset", "100"}
			if tc.invalid == "error_object" {
				args = append(args, "-errors", errFile)
			}
			var out, errb bytes.Buffer
			if code := run(args, bytes.NewReader(input), &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			key := "s3://b/iggy/app/logs/2024-03-16/14/00003-00000000000000000100-00000000000000000104.parquet"
			if !strings.Contains(errb.String(), key) {
				t.Fatalf("stderr does not name the key %s:\n%s", key, errb.String())
			}
			f := parquetread.ReadBytes(t, map[string][]byte{"out": out.Bytes()})["out"]
			if f.PyArrow.Error != "" || f.DuckDB.Error != "" {
				t.Fatalf("readers: %q %q", f.PyArrow.Error, f.DuckDB.Error)
			}
			py, _ := json.Marshal(map[string]any{"columns": f.PyArrow.Columns, "rows": f.PyArrow.Rows})
			duck, _ := json.Marshal(map[string]any{"columns": f.DuckDB.Columns, "rows": f.DuckDB.Rows})
			if !bytes.Equal(py, duck) {
				t.Fatalf("pyarrow and DuckDB read different things:\n%s\n%s", py, duck)
			}
			golden(t, "render/"+tc.name+".readback.golden", append(py, '\n'))
			if tc.invalid != "error_object" {
				return
			}
			errKey := "s3://b/iggy/_errors/app/logs/2024-03-16/14/00003-00000000000000000100-00000000000000000104.errors.jsonl"
			if !strings.Contains(errb.String(), "1 records could not be written") || !strings.Contains(errb.String(), errKey) {
				t.Fatalf("stderr does not name the error object %s:\n%s", errKey, errb.String())
			}
			lines, err := os.ReadFile(errFile)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "render/"+tc.name+".errors.golden", lines)
		})
	}
}

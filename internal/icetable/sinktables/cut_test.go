package sinktables_test

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable/sinktables"
)

// TestTableCut: with tables on, objects end at the period the table is
// partitioned by, the path template's finest time field (hour at the
// finest); without tables, a time field or the timestamp column, never.
func TestTableCut(t *testing.T) {
	iceberg := map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_COMPRESSION": "none", "SINK_TABLE_FORMAT": "iceberg", "SINK_ICEBERG_CATALOG": "glue"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range iceberg {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want batch.Cut
	}{
		{"default template", with(nil), batch.CutHour},
		{"minutes: hour, Iceberg's finest", with(map[string]string{"SINK_PATH_TEMPLATE": "{stream}/{topic}/{date}/{hour}/{minute}"}), batch.CutHour},
		{"date", with(map[string]string{"SINK_PATH_TEMPLATE": "dt={date}/{stream}/{topic}"}), batch.CutDay},
		{"month", with(map[string]string{"SINK_PATH_TEMPLATE": "{stream}/{topic}/{year}/{month}"}), batch.CutMonth},
		{"year", with(map[string]string{"SINK_PATH_TEMPLATE": "{stream}/{topic}/{year}"}), batch.CutYear},
		{"no time field", with(map[string]string{"SINK_PATH_TEMPLATE": "{stream}/{topic}"}), batch.NoCut},
		{"no timestamp column", with(map[string]string{"SINK_INCLUDE_METADATA": "false"}), batch.NoCut},
		{"no tables", map[string]string{"SINK_OUTPUT_FORMAT": "parquet"}, batch.NoCut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := loadEnv(t, tc.env)
			if got := sinktables.Cut(cfg); got != tc.want {
				t.Fatalf("Cut = %v, want %v", got, tc.want)
			}
			if got := app.DrainOptions(cfg, nil, 0).Rotation.Cut; got != tc.want {
				t.Fatalf("the drain's rotation cuts at %v, want %v", got, tc.want)
			}
		})
	}
}

func loadEnv(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	base := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "app", "SINK_TOPICS": "logs"}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := base[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

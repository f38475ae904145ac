package app

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
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
			if got := tableCut(cfg); got != tc.want {
				t.Fatalf("tableCut = %v, want %v", got, tc.want)
			}
			if got := DrainOptions(cfg, nil, 0).Rotation.Cut; got != tc.want {
				t.Fatalf("the drain's rotation cuts at %v, want %v", got, tc.want)
			}
		})
	}
}

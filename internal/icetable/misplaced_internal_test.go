package icetable

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestMisplacedValue checks the table audit's rule for a table split by a
// payload field: a file's rows must all hold its partition's value, by the
// file's own bounds of the column.
func TestMisplacedValue(t *testing.T) {
	country := iceberg.NestedField{ID: 7, Name: "country", Type: iceberg.PrimitiveTypes.String}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{7}, FieldID: 1000, Name: "country", Transform: iceberg.IdentityTransform{}})
	long := strings.Repeat("é", 20)
	for _, tc := range []struct {
		name         string
		value        any
		lower, upper string // "" for no bound
		nulls        int64
		want         string // part of the finding, "" for none
		emptyBounds  bool   // bounds "".."" (lower and upper unset)
	}{
		{"its value", "DE", "DE", "DE", 0, "", false},
		{"another value too", "DE", "DE", "FR", 0, `range over "DE".."FR"`, false},
		{"rows without it", "DE", "DE", "DE", 2, "2 of its rows have no country", false},
		{"null partition with values", nil, "DE", "DE", 0, "= null", false},
		{"null partition of nulls", nil, "", "", 5, "", false},
		{"a long value's cut bounds", long, string([]rune(long)[:16]), string([]rune(long)[:15]) + "ê", 0, "", false},
		{"a long value's wrong bounds", long, "x", "y", 0, "start at", false},
		{"no bounds", "DE", "", "", 0, "", false},
		{"null partition of nulls and empty strings", nil, "", "", 3, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lower, upper := map[int][]byte{}, map[int][]byte{}
			if tc.lower != "" || tc.emptyBounds {
				lower[7], upper[7] = []byte(tc.lower), []byte(tc.upper)
			}
			b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://b/k.parquet", iceberg.ParquetFile,
				map[int]any{1000: tc.value}, nil, nil, 10, 100)
			if err != nil {
				t.Fatal(err)
			}
			df := b.LowerBoundValues(lower).UpperBoundValues(upper).NullValueCounts(map[int]int64{7: tc.nulls}).Build()
			got := misplacedValue(df, country, spec.Field(0))
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("misplacedValue = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNullForEmpty: a payload field's empty string partition (the default
// folder's file, by its statistics) is registered as null, with the file's
// other partition values and statistics as they were; another file is
// left alone.
func TestNullForEmpty(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 7, Name: "country", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "timestamp_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{7}, FieldID: 1001, Name: "country", Transform: iceberg.IdentityTransform{}})
	build := func(country any) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://b/k.parquet", iceberg.ParquetFile,
			map[int]any{1000: iceberg.Date(20794), 1001: country}, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		return b.LowerBoundValues(map[int][]byte{7: {}}).UpperBoundValues(map[int][]byte{7: {}}).
			NullValueCounts(map[int]int64{7: 4}).ValueCounts(map[int]int64{7: 10}).ColumnSizes(map[int]int64{7: 33}).Build()
	}
	df, err := nullForEmpty(build(""), spec, sc, []string{"country"})
	if err != nil {
		t.Fatal(err)
	}
	p := df.Partition()
	if p[1001] != nil || p[1000] != iceberg.Date(20794) {
		t.Fatalf("partition %v, want the day kept and country null", p)
	}
	if df.Count() != 10 || df.FileSizeBytes() != 100 || df.NullValueCounts()[7] != 4 || df.ValueCounts()[7] != 10 ||
		df.ColumnSizes()[7] != 33 || df.LowerBoundValues()[7] == nil || df.FilePath() != "s3://b/k.parquet" {
		t.Fatalf("the statistics changed: count %d size %d nulls %v values %v sizes %v lower %v",
			df.Count(), df.FileSizeBytes(), df.NullValueCounts(), df.ValueCounts(), df.ColumnSizes(), df.LowerBoundValues())
	}
	de := build("DE")
	if got, err := nullForEmpty(de, spec, sc, []string{"country"}); err != nil || got != de {
		t.Fatalf("a file of DE was built again (%v)", err)
	}
	if got, err := nullForEmpty(build(""), spec, sc, nil); err != nil || got.Partition()[1001] != "" {
		t.Fatal("an empty string of a column that no payload field names was made null")
	}
}

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
	}{
		{"its value", "DE", "DE", "DE", 0, ""},
		{"another value too", "DE", "DE", "FR", 0, `range over "DE".."FR"`},
		{"rows without it", "DE", "DE", "DE", 2, "2 of its rows have no country"},
		{"null partition with values", nil, "DE", "DE", 0, "= null"},
		{"null partition of nulls", nil, "", "", 5, ""},
		{"a long value's cut bounds", long, string([]rune(long)[:16]), string([]rune(long)[:15]) + "ê", 0, ""},
		{"a long value's wrong bounds", long, "x", "y", 0, "start at"},
		{"no bounds", "DE", "", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lower, upper := map[int][]byte{}, map[int][]byte{}
			if tc.lower != "" {
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

package icetable

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

func TestConformFields(t *testing.T) {
	long, dbl, str, js := parquet.Type{Kind: "int64"}, parquet.Type{Kind: "double"}, parquet.Type{Kind: "string"}, parquet.Type{Kind: "json"}
	list := func(e parquet.Type) parquet.Type { return parquet.Type{Kind: "list", Elem: &e} }
	strct := func(fs ...parquet.Field) parquet.Type { return parquet.Type{Kind: "struct", Fields: fs} }
	table := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "ctx", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 5, Name: "user", Type: iceberg.PrimitiveTypes.String}}}},
		iceberg.NestedField{ID: 6, Name: "tags", Type: &iceberg.ListType{ElementID: 7, Element: iceberg.PrimitiveTypes.Int64}},
		iceberg.NestedField{ID: 8, Name: "when", Type: iceberg.PrimitiveTypes.Date},
	)
	tests := []struct {
		name      string
		have      parquet.Field
		want      parquet.Type
		addsToTbl bool
	}{
		{"same type", parquet.Field{Name: "n", Type: long}, long, false},
		{"long column, fractions seen: long (they are rejected)", parquet.Field{Name: "n", Type: dbl}, long, false},
		{"long column, strings seen", parquet.Field{Name: "n", Type: str}, long, false},
		{"double column, integers seen: double (they fit)", parquet.Field{Name: "d", Type: long}, dbl, false},
		{"string column, numbers seen: their JSON text", parquet.Field{Name: "s", Type: long}, js, false},
		{"string column, mixed values: JSON text as inferred", parquet.Field{Name: "s", Type: js}, js, false},
		{"string column, an object seen", parquet.Field{Name: "s", Type: strct(parquet.Field{Name: "a", Type: long})}, js, false},
		{"struct member retyped, a new member added", parquet.Field{Name: "ctx", Type: strct(parquet.Field{Name: "user", Type: long}, parquet.Field{Name: "id", Type: long})},
			strct(parquet.Field{Name: "user", Type: js}, parquet.Field{Name: "id", Type: long}), true},
		{"struct column, a string seen: the struct (the string is rejected)", parquet.Field{Name: "ctx", Type: str}, strct(parquet.Field{Name: "user", Type: str}), false},
		{"list element retyped", parquet.Field{Name: "tags", Type: list(dbl)}, list(long), false},
		{"a type the sink does not write: as inferred", parquet.Field{Name: "when", Type: str}, str, false},
		{"a new column", parquet.Field{Name: "new", Type: dbl}, dbl, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := conformFields(table, []parquet.Field{tc.have})
			if len(out) != 1 || out[0].Name != tc.have.Name || !out[0].Type.Equal(tc.want) {
				t.Fatalf("conformed to %+v, want %+v", out, tc.want)
			}
			if got := addsColumns(table, out); got != tc.addsToTbl {
				t.Fatalf("adds columns = %v, want %v", got, tc.addsToTbl)
			}
		})
	}
	if out := conformFields(nil, []parquet.Field{{Name: "n", Type: dbl}}); !out[0].Type.Equal(dbl) || !addsColumns(nil, out) {
		t.Fatalf("without a table: %+v", out)
	}
}

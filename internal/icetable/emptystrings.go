package icetable

import (
	"fmt"
	"iter"

	"github.com/apache/iceberg-go"
	"github.com/twmb/avro/atype"
)

// nullForEmpty gives back df with every empty string among its partition
// values of the payload fields (identity fields on the columns values
// names) made null. A file's partition comes from its column statistics,
// and the file of a payload field's default folder (Hive's NULL
// partition: the records without a scalar there, and those with an empty
// string, keys.AppendValueSegment) has "" as its only non-null value when
// one of its records holds one. That partition would be wrong for its
// null rows, and iceberg-go (v0.7.0) writes an empty string's bound in the
// manifest list as null, which every engine reads as "nothing but null
// here", skipping the whole manifest in a filtered scan. So the file is
// registered in the null partition its folder names.
func nullForEmpty(df iceberg.DataFile, spec iceberg.PartitionSpec, sc *iceberg.Schema, values []string) (iceberg.DataFile, error) {
	part := df.Partition()
	changed := false
	for _, pf := range valuePartitionFields(sc, spec, values) {
		if s, ok := part[pf.FieldID].(string); ok && s == "" {
			part[pf.FieldID] = nil
			changed = true
		}
	}
	if !changed {
		return df, nil
	}
	// The partition's Avro logical types, as iceberg-go gives them when it
	// builds a data file from its statistics.
	logical := map[int]string{}
	for _, f := range spec.Fields() {
		src, ok := sc.FindFieldByID(f.SourceID())
		if !ok {
			continue
		}
		switch f.Transform.ResultType(src.Type).(type) {
		case iceberg.DateType:
			logical[f.FieldID] = atype.Date
		case iceberg.TimeType:
			logical[f.FieldID] = atype.TimeMicros
		case iceberg.TimestampType, iceberg.TimestampTzType:
			logical[f.FieldID] = atype.TimestampMicros
		case iceberg.DecimalType:
			logical[f.FieldID] = atype.Decimal
		case iceberg.UUIDType:
			logical[f.FieldID] = atype.UUID
		}
	}
	b, err := iceberg.NewDataFileBuilder(spec, df.ContentType(), df.FilePath(), df.FileFormat(), part, logical, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, fmt.Errorf("icetable: %s: %w", df.FilePath(), err)
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).LowerBoundValues(df.LowerBoundValues()).UpperBoundValues(df.UpperBoundValues())
	if d := df.DistinctValueCounts(); d != nil {
		b.DistinctValueCounts(d)
	}
	if k := df.KeyMetadata(); k != nil {
		b.KeyMetadata(k)
	}
	if o := df.SplitOffsets(); o != nil {
		b.SplitOffsets(o)
	}
	if id := df.SortOrderID(); id != nil {
		b.SortOrderID(*id)
	}
	return b.Build(), nil
}

// valuePartitionFields yields spec's identity fields on the columns of
// the payload fields values names, with each column.
func valuePartitionFields(sc *iceberg.Schema, spec iceberg.PartitionSpec, values []string) iter.Seq2[iceberg.NestedField, iceberg.PartitionField] {
	return func(yield func(iceberg.NestedField, iceberg.PartitionField) bool) {
		for _, v := range values {
			f, ok := sc.FindFieldByName(v)
			if !ok {
				continue
			}
			for _, pf := range spec.FieldsBySourceID(f.ID) {
				if _, identity := pf.Transform.(iceberg.IdentityTransform); identity && !yield(f, pf) {
					return
				}
			}
		}
	}
}

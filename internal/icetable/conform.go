package icetable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// Why files take the table's types before they are written: Iceberg
// forbids most type changes (long to double, string to long), and an
// object whose column another object's type contradicts could never join
// the table. So the table decides each column's type once: a file's
// columns the table has take its types (a record whose value does not fit
// goes to the error object), and the columns it lacks are added to the
// table (a schema-only commit, conditional like any other) before the
// file is written. Columns are only ever added, never retyped, so a file
// rendered again after a crash takes the same types and has the same bytes.

// tableSchema is the schema a table had when last read, shared by the
// partitions of one table in this process.
type tableSchema struct {
	mu     sync.Mutex
	loaded bool
	tbl    *table.Table // nil: the table does not exist
}

// Conform returns the parquet.ConformFunc for the files of stream/topic's
// table. Each call may read the table and commit new columns, each within
// CallTimeout.
func (r *Registrar) Conform(stream, topic string) parquet.ConformFunc {
	name := r.Table(stream, topic)
	return func(cols []parquet.Field) ([]parquet.Field, error) {
		return r.conform(context.Background(), name, cols)
	}
}

func (r *Registrar) schemaOf(name string) *tableSchema {
	r.schemasMu.Lock()
	defer r.schemasMu.Unlock()
	if r.schemas == nil {
		r.schemas = map[string]*tableSchema{}
	}
	ts := r.schemas[name]
	if ts == nil {
		ts = &tableSchema{}
		r.schemas[name] = ts
	}
	return ts
}

// forgetSchemas makes Conform read each table again: a table replaced
// meanwhile is seen by the next run.
func (r *Registrar) forgetSchemas() {
	r.schemasMu.Lock()
	defer r.schemasMu.Unlock()
	for _, ts := range r.schemas {
		ts.mu.Lock()
		ts.loaded, ts.tbl = false, nil
		ts.mu.Unlock()
	}
}

func (r *Registrar) conform(ctx context.Context, name string, cols []parquet.Field) ([]parquet.Field, error) {
	ts := r.schemaOf(name)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ident := table.Identifier{r.Namespace, name}
	attempts := max(r.Attempts, 1)
	for attempt := 1; ; attempt++ {
		if !ts.loaded {
			tbl, err := r.load(ctx, ident)
			if err != nil {
				return nil, err
			}
			ts.tbl, ts.loaded = tbl, true
		}
		var current *iceberg.Schema
		if ts.tbl != nil {
			current = ts.tbl.Schema()
		}
		out := conformFields(current, cols)
		if !addsColumns(current, out) {
			return out, nil
		}
		tbl, err := r.addColumns(ctx, ident, ts.tbl, out)
		if err == nil {
			ts.tbl = tbl
			r.Log.Info("iceberg columns added", "table", name, "file_columns", len(out))
			return out, nil
		}
		ts.loaded = false
		if (errors.Is(err, table.ErrCommitFailed) || errors.Is(err, catalog.ErrTableAlreadyExists)) && attempt < attempts {
			continue
		}
		return nil, fmt.Errorf("icetable: table %s: add the file's columns: %w", name, err)
	}
}

// addColumns commits out's new columns to the table, creating it (with
// Fixed's columns first) when it does not exist; it returns the table.
func (r *Registrar) addColumns(ctx context.Context, ident table.Identifier, tbl *table.Table, out []parquet.Field) (*table.Table, error) {
	if err := r.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	payload := icebergSchema(out)
	if tbl == nil {
		first := payload
		if r.Fixed != nil {
			first = r.Fixed
		}
		created, err := r.create(cctx, ident, first)
		if err != nil {
			return nil, err
		}
		tbl = created
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).UnionByNameWith(payload).Commit(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	if err := setNameMapping(tx, tbl); err != nil {
		return nil, err
	}
	return tx.Commit(cctx)
}

// FixedColumns is the schema of the columns every file written with opts
// has before its payload columns (metadata, headers), read from a file of
// no records as any file's columns are; nil when there are none.
func FixedColumns(opts parquet.Options) (*iceberg.Schema, error) {
	if !opts.IncludeMetadata && !opts.IncludeHeaders {
		return nil, nil
	}
	opts.Payload, opts.Schema, opts.Conform = parquet.PayloadJSON, nil, nil
	enc, err := parquet.NewEncoder(opts)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc.Reset(parquet.Source{})
	if err := enc.Begin(&buf); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	return footerSchema(rdr)
}

// conformFields gives each column the type the table has for it, where
// the file's values can be written as it; other columns stay as inferred.
func conformFields(sc *iceberg.Schema, cols []parquet.Field) []parquet.Field {
	out := make([]parquet.Field, len(cols))
	for i, c := range cols {
		out[i] = c
		if sc != nil {
			if f, ok := fieldNamed(sc.Fields(), c.Name); ok {
				out[i].Type = conformType(f.Type, c.Type)
			}
		}
	}
	return out
}

func fieldNamed(fields []iceberg.NestedField, name string) (iceberg.NestedField, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return iceberg.NestedField{}, false
}

// conformType is the type a file column inferred as have is written with
// under the table's type want.
func conformType(want iceberg.Type, have parquet.Type) parquet.Type {
	switch w := want.(type) {
	case *iceberg.StructType:
		if have.Kind != "struct" {
			break
		}
		fields := make([]parquet.Field, len(have.Fields))
		for i, f := range have.Fields {
			fields[i] = f
			if tf, ok := fieldNamed(w.FieldList, f.Name); ok {
				fields[i].Type = conformType(tf.Type, f.Type)
			}
		}
		return parquet.Type{Kind: "struct", Fields: fields}
	case *iceberg.ListType:
		if have.Kind != "list" || have.Elem == nil {
			break
		}
		e := conformType(w.Element, *have.Elem)
		return parquet.Type{Kind: "list", Elem: &e}
	case iceberg.StringType:
		if have.Kind == "string" || have.Kind == "json" {
			return have
		}
		// Any other value is kept as its JSON text, as inference does for
		// a field of two kinds.
		return parquet.Type{Kind: "json"}
	}
	if t, ok := parquetType(want); ok {
		return t
	}
	return have // a type the sink does not write: the commit names the file
}

// parquetType is the Parquet column type for an Iceberg type, when the
// sink writes one.
func parquetType(t iceberg.Type) (parquet.Type, bool) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return parquet.Type{Kind: "bool"}, true
	case iceberg.Int32Type:
		return parquet.Type{Kind: "int32"}, true
	case iceberg.Int64Type:
		return parquet.Type{Kind: "int64"}, true
	case iceberg.Float64Type:
		return parquet.Type{Kind: "double"}, true
	case iceberg.StringType:
		return parquet.Type{Kind: "string"}, true
	case iceberg.TimestampTzType:
		return parquet.Type{Kind: "timestamp"}, true
	case *iceberg.StructType:
		fields := make([]parquet.Field, len(t.FieldList))
		for i, f := range t.FieldList {
			ft, ok := parquetType(f.Type)
			if !ok {
				return parquet.Type{}, false
			}
			fields[i] = parquet.Field{Name: f.Name, Type: ft}
		}
		return parquet.Type{Kind: "struct", Fields: fields}, len(fields) > 0
	case *iceberg.ListType:
		e, ok := parquetType(t.Element)
		return parquet.Type{Kind: "list", Elem: &e}, ok
	}
	return parquet.Type{}, false
}

// addsColumns reports whether out names a column or member sc lacks.
func addsColumns(sc *iceberg.Schema, out []parquet.Field) bool {
	if sc == nil {
		return len(out) > 0
	}
	return addsFields(sc.Fields(), out)
}

func addsFields(have []iceberg.NestedField, out []parquet.Field) bool {
	for _, f := range out {
		tf, ok := fieldNamed(have, f.Name)
		if !ok || addsType(tf.Type, f.Type) {
			return true
		}
	}
	return false
}

func addsType(have iceberg.Type, t parquet.Type) bool {
	switch h := have.(type) {
	case *iceberg.StructType:
		return t.Kind == "struct" && addsFields(h.FieldList, t.Fields)
	case *iceberg.ListType:
		return t.Kind == "list" && t.Elem != nil && addsType(h.Element, *t.Elem)
	}
	return false
}

// icebergSchema is the Iceberg schema of payload columns (every field
// optional; ids are placeholders, a union matches by name).
func icebergSchema(cols []parquet.Field) *iceberg.Schema {
	id := 0
	next := func() int { id++; return id }
	var conv func(t parquet.Type) iceberg.Type
	fields := func(fs []parquet.Field) []iceberg.NestedField {
		out := make([]iceberg.NestedField, len(fs))
		for i, f := range fs {
			out[i] = iceberg.NestedField{ID: next(), Name: f.Name}
			out[i].Type = conv(f.Type)
		}
		return out
	}
	conv = func(t parquet.Type) iceberg.Type {
		switch t.Kind {
		case "bool":
			return iceberg.PrimitiveTypes.Bool
		case "int32":
			return iceberg.PrimitiveTypes.Int32
		case "int64":
			return iceberg.PrimitiveTypes.Int64
		case "double":
			return iceberg.PrimitiveTypes.Float64
		case "timestamp":
			return iceberg.PrimitiveTypes.TimestampTz
		case "struct":
			return &iceberg.StructType{FieldList: fields(t.Fields)}
		case "list":
			eid := next()
			return &iceberg.ListType{ElementID: eid, Element: conv(*t.Elem), ElementRequired: false}
		}
		return iceberg.PrimitiveTypes.String // string, json
	}
	return iceberg.NewSchema(0, fields(cols)...)
}

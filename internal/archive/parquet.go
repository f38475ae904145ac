package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// decodeParquet reads a Parquet object (internal/parquet/doc.md's columns)
// back into records. Under schema json the payload is put together from
// its field columns in the file's column order; a null member is left out
// (a file cannot tell a null from a missing one), and a member whose
// values had two kinds comes back as the string of its JSON text.
func decodeParquet(body []byte, l Layout) (recs []Record, err error) {
	defer func() {
		// arrow-go panics on some malformed files: an error, not a crash.
		if r := recover(); r != nil {
			recs, err = nil, fmt.Errorf("archive: the Parquet file cannot be read: %v", r)
		}
	}()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(body), parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("archive: the Parquet file cannot be read: %w", err)
	}
	defer tbl.Release()
	rows := int(tbl.NumRows())
	recs = make([]Record, rows)
	payloads := make([][]byte, rows)
	hasField := make([]bool, rows)
	for i := range payloads {
		payloads[i] = []byte{'{'}
	}
	var whole, extra arrow.Array
	sch := tbl.Schema()
	for c := 0; c < int(tbl.NumCols()); c++ {
		name := sch.Field(c).Name
		col := tbl.Column(c).Data()
		if len(col.Chunks()) != 1 {
			chunk, err := array.Concatenate(col.Chunks(), memory.DefaultAllocator)
			if err != nil {
				return nil, fmt.Errorf("archive: column %s: %w", name, err)
			}
			defer chunk.Release()
			if err := each(chunk, name, l, recs, payloads, hasField, &whole, &extra); err != nil {
				return nil, err
			}
			continue
		}
		if err := each(col.Chunk(0), name, l, recs, payloads, hasField, &whole, &extra); err != nil {
			return nil, err
		}
	}
	for i := range recs {
		switch {
		case whole != nil && !whole.IsNull(i):
			recs[i].Payload = wholePayload(whole, i, l.Schema)
		default:
			p := payloads[i]
			if extra != nil && !extra.IsNull(i) {
				p = mergeExtra(p, hasField[i], extra.(*array.String).Value(i))
			}
			recs[i].Payload = append(p, '}')
		}
	}
	return recs, nil
}

// each takes one top-level column into the records.
func each(a arrow.Array, name string, l Layout, recs []Record, payloads [][]byte, hasField []bool, whole, extra *arrow.Array) error {
	switch {
	case l.Metadata && name == "offset":
		v, ok := a.(*array.Int64)
		if !ok {
			return fmt.Errorf("archive: column offset is %s, not int64", a.DataType())
		}
		for i := range recs {
			recs[i].Offset, recs[i].HasOffset = uint64(v.Value(i)), true
		}
		return nil
	case l.Metadata && name == "timestamp":
		v, ok := a.(*array.Timestamp)
		if !ok {
			return fmt.Errorf("archive: column timestamp is %s, not a timestamp", a.DataType())
		}
		for i := range recs {
			if us := int64(v.Value(i)); us > 0 {
				recs[i].Timestamp = uint64(us)
			}
		}
		return nil
	case l.Metadata && (name == "stream" || name == "topic" || name == "partition_id"):
		return nil
	case l.Headers && name == "headers":
		m, ok := a.(*array.Map)
		if !ok {
			return fmt.Errorf("archive: column headers is %s, not a map", a.DataType())
		}
		keys, kok := m.Keys().(*array.String)
		vals, vok := m.Items().(*array.String)
		if !kok || !vok {
			return fmt.Errorf("archive: column headers is %s, not map<string,string>", a.DataType())
		}
		for i := range recs {
			if m.IsNull(i) {
				continue
			}
			start, end := m.ValueOffsets(i)
			var h []byte
			for j := start; j < end; j++ {
				h = AppendHeader(h, keys.Value(int(j)), kindString, []byte(vals.Value(int(j))))
			}
			recs[i].Headers = h
		}
		return nil
	case name == "payload":
		*whole = a
		return nil
	case name == "payload_extra":
		if _, ok := a.(*array.String); !ok {
			return fmt.Errorf("archive: column payload_extra is %s, not a string", a.DataType())
		}
		*extra = a
		return nil
	}
	member := name
	if member == "_" {
		member = "" // the empty name's column
	}
	for i := range recs {
		if a.IsNull(i) {
			continue
		}
		p := payloads[i]
		if hasField[i] {
			p = append(p, ',')
		}
		p = jsonscan.AppendString(p, []byte(member))
		p = append(p, ':')
		var err error
		if p, err = appendValue(p, a, i); err != nil {
			return fmt.Errorf("archive: column %s: %w", name, err)
		}
		payloads[i], hasField[i] = p, true
	}
	return nil
}

// wholePayload is a payload the file holds in one column.
func wholePayload(a arrow.Array, i int, schema batch.Schema) []byte {
	switch v := a.(type) {
	case *array.String:
		return []byte(v.Value(i)) // schema json's JSON text, or schema text's text
	case *array.Binary:
		return bytes.Clone(v.Value(i))
	}
	return nil
}

// mergeExtra adds payload_extra's members (a JSON object) to the payload.
func mergeExtra(p []byte, hasField bool, extra string) []byte {
	inner := bytes.TrimSpace([]byte(extra))
	if len(inner) < 2 || inner[0] != '{' {
		return p
	}
	inner = bytes.TrimSpace(inner[1 : len(inner)-1])
	if len(inner) == 0 {
		return p
	}
	if hasField {
		p = append(p, ',')
	}
	return append(p, inner...)
}

// appendValue appends a's value at i (not null) as JSON.
func appendValue(dst []byte, a arrow.Array, i int) ([]byte, error) {
	switch v := a.(type) {
	case *array.Int64:
		return strconv.AppendInt(dst, v.Value(i), 10), nil
	case *array.Int32:
		return strconv.AppendInt(dst, int64(v.Value(i)), 10), nil
	case *array.Float64:
		b, err := json.Marshal(v.Value(i))
		if err != nil { // NaN and infinities are no JSON number
			return jsonscan.AppendString(dst, []byte(strconv.FormatFloat(v.Value(i), 'g', -1, 64))), nil
		}
		return append(dst, b...), nil
	case *array.Boolean:
		return strconv.AppendBool(dst, v.Value(i)), nil
	case *array.String:
		return jsonscan.AppendString(dst, []byte(v.Value(i))), nil
	case *array.Binary:
		return jsonscan.AppendBase64(dst, v.Value(i)), nil
	case *array.Timestamp:
		t := time.UnixMicro(int64(v.Value(i))).UTC()
		return jsonscan.AppendString(dst, []byte(t.Format(time.RFC3339Nano))), nil
	case *array.Struct:
		dst = append(dst, '{')
		st := v.DataType().(*arrow.StructType)
		first := true
		for f := 0; f < v.NumField(); f++ {
			fa := v.Field(f)
			if fa.IsNull(i) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = jsonscan.AppendString(dst, []byte(st.Field(f).Name))
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, fa, i); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case *array.List:
		start, end := v.ValueOffsets(i)
		el := v.ListValues()
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			if el.IsNull(int(j)) {
				dst = append(dst, "null"...)
				continue
			}
			var err error
			if dst, err = appendValue(dst, el, int(j)); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	return nil, fmt.Errorf("type %s cannot be read back", a.DataType())
}

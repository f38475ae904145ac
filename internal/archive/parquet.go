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
	sch := tbl.Schema()
	cols := make([]column, tbl.NumCols())
	for c := range cols {
		name := sch.Field(c).Name
		chunks := tbl.Column(c).Data().Chunks()
		if len(chunks) == 1 {
			cols[c] = column{name, chunks[0]}
			continue
		}
		a, err := array.Concatenate(chunks, memory.DefaultAllocator)
		if err != nil {
			return nil, fmt.Errorf("archive: column %s: %w", name, err)
		}
		defer a.Release()
		cols[c] = column{name, a}
	}
	whole, extra := special(cols, l)
	for _, c := range cols {
		if c.a == whole || c.a == extra {
			continue
		}
		if err := each(c.a, c.name, l, recs, payloads, hasField); err != nil {
			return nil, err
		}
	}
	for i := range recs {
		switch {
		case whole != nil && !whole.IsNull(i):
			if recs[i].Payload, err = wholePayload(whole, i); err != nil {
				return nil, err
			}
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

// column is one top-level column of a file.
type column struct {
	name string
	a    arrow.Array
}

// special finds the payload column (the whole payload) and payload_extra
// among a file's columns. Under schema json a member may be named so too
// (the writer renames it only when the file has the column of that name):
// the column "payload" is the whole payload when it holds JSON text only
// in rows with no member column set, payload_extra when it holds JSON
// objects only. Anything else is a member.
func special(cols []column, l Layout) (whole, extra arrow.Array) {
	meta := func(name string) bool {
		return (l.Metadata && (name == "offset" || name == "timestamp" || name == "stream" || name == "topic" || name == "partition_id")) ||
			(l.Headers && name == "headers")
	}
	for _, c := range cols {
		switch {
		case c.name == "payload" && l.Schema != batch.SchemaJSON:
			whole = c.a
		case c.name == "payload":
			// With metadata or headers the writer's own column holds
			// only payloads that are not objects (objects fill the member
			// columns); a member's JSON text may be an object.
			if whole = c.a; !allJSON(c.a, false) || ((l.Metadata || l.Headers) && anyObject(c.a)) {
				whole = nil
			}
		case c.name == "payload_extra" && allJSON(c.a, true):
			extra = c.a
		}
	}
	if whole == nil || l.Schema != batch.SchemaJSON {
		return whole, extra
	}
	for i := 0; i < whole.Len(); i++ {
		if whole.IsNull(i) {
			continue
		}
		for _, c := range cols {
			if c.a != whole && c.a != extra && !meta(c.name) && !c.a.IsNull(i) {
				return nil, extra // a member set beside it: "payload" is a member too
			}
		}
	}
	return whole, extra
}

// anyObject reports whether a string column holds a JSON object's text.
func anyObject(a arrow.Array) bool {
	v := a.(*array.String)
	for i := 0; i < v.Len(); i++ {
		if !v.IsNull(i) && bytes.HasPrefix(bytes.TrimSpace([]byte(v.Value(i))), []byte("{")) {
			return true
		}
	}
	return false
}

// allJSON reports whether a is a string column whose values are JSON text
// (JSON objects, when objects).
func allJSON(a arrow.Array, objects bool) bool {
	v, ok := a.(*array.String)
	if !ok {
		return false
	}
	for i := 0; i < v.Len(); i++ {
		if v.IsNull(i) {
			continue
		}
		text := bytes.TrimSpace([]byte(v.Value(i)))
		if !json.Valid(text) || (objects && text[0] != '{') {
			return false
		}
	}
	return true
}

// each takes one top-level column into the records.
func each(a arrow.Array, name string, l Layout, recs []Record, payloads [][]byte, hasField []bool) error {
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
		if !ok || v.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			return fmt.Errorf("archive: column timestamp is %s, not a timestamp in microseconds", a.DataType())
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
	}
	// The column's name is the member's: a member renamed for its column
	// ("" as "_", "payload" as "payload_2") cannot be told from one named
	// so, and comes back under the column's name (docs/restore.md).
	member := name
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
func wholePayload(a arrow.Array, i int) ([]byte, error) {
	switch v := a.(type) {
	case *array.String:
		return []byte(v.Value(i)), nil // schema json's JSON text, or schema text's text
	case *array.Binary:
		return bytes.Clone(v.Value(i)), nil
	}
	return nil, fmt.Errorf("archive: column payload is %s, not a string or binary", a.DataType())
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

package parquet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The oracle computes, with encoding/json and the rules as the package doc
// states them, the columns and rows a file must read back as. It shares no
// code with the writer.

type otype struct {
	kind   string // null bool int64 double string json struct list
	fields []ofield
	elem   *otype
}

type ofield struct {
	key, name string
	t         *otype
}

// arrow spells the type as pyarrow prints it (readback.py normalises
// DuckDB's types to the same spelling).
func (t *otype) arrow() string {
	switch t.kind {
	case "json":
		return "string"
	case "struct":
		var parts []string
		for _, f := range t.fields {
			if f.t.kind != "null" {
				parts = append(parts, f.name+": "+f.t.arrow())
			}
		}
		return "struct<" + strings.Join(parts, ", ") + ">"
	case "list":
		return "list<element: " + t.elem.arrow() + ">"
	}
	return t.kind
}

// members splits a JSON object into its members in order.
func members(raw json.RawMessage) [][2]json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.Token() // {
	var out [][2]json.RawMessage
	for dec.More() {
		k, _ := dec.Token()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			panic(err)
		}
		kb, _ := json.Marshal(k.(string))
		out = append(out, [2]json.RawMessage{kb, v})
	}
	return out
}

func elements(raw json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

func keyOf(k json.RawMessage) string {
	var s string
	json.Unmarshal(k, &s)
	return s
}

// classify names a raw value's JSON kind; integers beyond int64 count as
// floats.
func classify(raw json.RawMessage) string {
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return "int"
	}
	return "float"
}

// inferType unions values seen at one field, depth containers below the
// payload.
func inferType(values []json.RawMessage, depth int) *otype {
	kinds := map[string]bool{}
	for _, v := range values {
		kinds[classify(v)] = true
	}
	delete(kinds, "null")
	if kinds["int"] && kinds["float"] {
		delete(kinds, "int")
	}
	switch {
	case len(kinds) == 0:
		return &otype{kind: "null"}
	case len(kinds) > 1:
		return &otype{kind: "json"}
	case (kinds["object"] || kinds["array"]) && depth > maxNesting:
		return &otype{kind: "json"}
	case kinds["bool"]:
		return &otype{kind: "bool"}
	case kinds["int"]:
		return &otype{kind: "int64"}
	case kinds["float"]:
		return &otype{kind: "double"}
	case kinds["string"]:
		return &otype{kind: "string"}
	case kinds["object"]:
		if distinctMembers(values) > maxMembers {
			return &otype{kind: "json"}
		}
		return inferStruct(values, depth, nil)
	}
	var elems []json.RawMessage
	for _, v := range values {
		if v[0] == '[' {
			elems = append(elems, elements(v)...)
		}
	}
	el := inferType(elems, depth+1)
	if el.kind == "null" {
		return el
	}
	return &otype{kind: "list", elem: el}
}

func distinctMembers(values []json.RawMessage) int {
	names := map[string]bool{}
	for _, v := range values {
		if v[0] == '{' {
			for _, m := range members(v) {
				names[keyOf(m[0])] = true
			}
		}
	}
	return len(names)
}

func inferStruct(values []json.RawMessage, depth int, reserved []string) *otype {
	return inferStructOf(values, depth, reserved, nil)
}

// inferStructOf infers a struct from the members whose names allowed
// accepts (nil: all).
func inferStructOf(values []json.RawMessage, depth int, reserved []string, allowed map[string]bool) *otype {
	var order []string
	byKey := map[string][]json.RawMessage{}
	for _, v := range values {
		if v[0] != '{' {
			continue
		}
		for _, m := range members(v) {
			k := keyOf(m[0])
			if allowed != nil && !allowed[k] {
				continue
			}
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
				byKey[k] = nil
			}
			byKey[k] = append(byKey[k], m[1])
		}
	}
	t := &otype{kind: "struct"}
	taken := map[string]bool{}
	for _, r := range reserved {
		taken[strings.ToLower(r)] = true
	}
	cols := 0
	for _, k := range order {
		ft := inferType(byKey[k], depth+1)
		f := ofield{key: k, t: ft}
		if ft.kind != "null" {
			cols++
			base := k
			if base == "" {
				base = "_"
			}
			name := base
			for n := 2; taken[strings.ToLower(name)]; n++ {
				name = fmt.Sprintf("%s_%d", base, n)
			}
			taken[strings.ToLower(name)] = true
			f.name = name
		}
		t.fields = append(t.fields, f)
	}
	if cols == 0 && depth > 0 {
		return &otype{kind: "null"}
	}
	return t
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		panic(err)
	}
	return b.String()
}

// fl is an expected double; ts an expected timestamp in µs; pairs a map.
type (
	fl    float64
	ts    int64
	pairs [][2]string
	bin   []byte
)

// expect converts a raw value to what readers must return for type t.
func expect(raw json.RawMessage, t *otype) any {
	if raw == nil || raw[0] == 'n' {
		return nil
	}
	switch t.kind {
	case "json":
		return compact(raw)
	case "int64":
		v, _ := strconv.ParseInt(string(raw), 10, 64)
		return v
	case "double":
		v, _ := strconv.ParseFloat(string(raw), 64)
		return fl(v)
	case "string":
		var s string
		json.Unmarshal(raw, &s)
		return s
	case "bool":
		return raw[0] == 't'
	case "list":
		var out []any
		for _, e := range elements(raw) {
			out = append(out, expect(e, t.elem))
		}
		if out == nil {
			out = []any{}
		}
		return out
	case "struct":
		return expectStruct(raw, t)
	}
	panic("oracle: kind " + t.kind)
}

// expectStruct maps column names to expected values; of duplicate members
// the first one counts.
func expectStruct(raw json.RawMessage, t *otype) map[string]any {
	got := map[string]json.RawMessage{}
	for _, m := range members(raw) {
		if k := keyOf(m[0]); got[k] == nil {
			got[k] = m[1]
		}
	}
	out := map[string]any{}
	for _, f := range t.fields {
		if f.t.kind != "null" {
			out[f.name] = expect(got[f.key], f.t)
		}
	}
	return out
}

// oracleRecord is one source record for the oracle.
type oracleRecord struct {
	offset, timestamp uint64
	headers           []Header
	payload           []byte
}

// oracleFile is what a file written from records must read back as.
type oracleFile struct {
	columns  [][2]string // name, arrow type
	rows     [][]any
	rejected []uint64 // offsets of records that are not valid JSON
}

func validJSON(p []byte) bool { return json.Valid(p) && utf8.Valid(p) }

// oracleInferred models Options{Payload: json} with an inferred schema.
func oracleInferred(recs []oracleRecord, src Source, meta, headers bool) oracleFile {
	var f oracleFile
	var objs []json.RawMessage
	nonObject, wide := false, false
	var ok []oracleRecord
	for _, r := range recs {
		if !validJSON(r.payload) {
			f.rejected = append(f.rejected, r.offset)
			continue
		}
		ok = append(ok, r)
		p := json.RawMessage(bytes.TrimSpace(r.payload))
		if p[0] == '{' {
			objs = append(objs, p)
		} else {
			nonObject = true
		}
	}
	var reserved []string
	if meta {
		reserved = append(reserved, "offset", "timestamp", "stream", "topic", "partition_id")
		f.columns = append(f.columns, [2]string{"offset", "int64"}, [2]string{"timestamp", "timestamp[us, tz=UTC]"},
			[2]string{"stream", "string"}, [2]string{"topic", "string"}, [2]string{"partition_id", "int64"})
	}
	if headers {
		reserved = append(reserved, "headers")
		f.columns = append(f.columns, [2]string{"headers", "map<string, string>"})
	}
	if nonObject {
		reserved = append(reserved, "payload")
	}
	// The first maxMembers top-level names are columns, later ones go to
	// payload_extra.
	var allowed map[string]bool
	for _, o := range objs {
		for _, m := range members(o) {
			if k := keyOf(m[0]); allowed == nil || !allowed[k] && len(allowed) < maxMembers {
				if allowed == nil {
					allowed = map[string]bool{}
				}
				allowed[k] = true
			} else if !allowed[k] {
				wide = true
			}
		}
	}
	if wide {
		reserved = append(reserved, "payload_extra")
	}
	st := inferStructOf(objs, 0, reserved, allowed)
	cols := 0
	for _, fd := range st.fields {
		if fd.t.kind != "null" {
			f.columns = append(f.columns, [2]string{fd.name, fd.t.arrow()})
			cols++
		}
	}
	payloadCol := nonObject || (cols == 0 && !meta && !headers)
	if payloadCol {
		f.columns = append(f.columns, [2]string{"payload", "string"})
	}
	if wide {
		f.columns = append(f.columns, [2]string{"payload_extra", "string"})
	}
	for _, r := range ok {
		var row []any
		if meta {
			row = append(row, int64(r.offset), ts(r.timestamp), src.Stream, src.Topic, int64(src.Partition))
		}
		if headers {
			row = append(row, expectHeaders(r.headers))
		}
		p := json.RawMessage(bytes.TrimSpace(r.payload))
		obj := p[0] == '{'
		var vals map[string]any
		if obj {
			vals = expectStruct(p, st)
		}
		for _, fd := range st.fields {
			if fd.t.kind != "null" {
				row = append(row, vals[fd.name])
			}
		}
		if payloadCol {
			if obj {
				row = append(row, nil)
			} else {
				row = append(row, compact(p))
			}
		}
		if wide {
			row = append(row, extraMembers(p, allowed))
		}
		f.rows = append(f.rows, row)
	}
	return f
}

// expectHeaders sorts by key, the last duplicate winning.
func expectHeaders(hs []Header) any {
	if hs == nil {
		return nil
	}
	m := map[string]string{}
	for _, h := range hs {
		m[string(h.Key)] = string(h.Value)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := pairs{}
	for _, k := range keys {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

// sameValue compares an expected value with one a reader returned (decoded
// from readback.py's JSON with UseNumber).
func sameValue(exp, got any) error {
	switch e := exp.(type) {
	case nil:
		if got != nil {
			return fmt.Errorf("want null, got %v", got)
		}
		return nil
	case int64:
		n, ok := got.(json.Number)
		if v, err := n.Int64(); !ok || err != nil || v != e {
			return fmt.Errorf("want int %d, got %v (%T)", e, got, got)
		}
		return nil
	case fl:
		m, ok := got.(map[string]any)
		s, _ := m["$f"].(string)
		v, err := strconv.ParseFloat(strings.Replace(strings.Replace(s, "inf", "Inf", 1), "nan", "NaN", 1), 64)
		if !ok || err != nil || !(v == float64(e) || math.IsNaN(v) && math.IsNaN(float64(e))) {
			return fmt.Errorf("want double %v, got %v", float64(e), got)
		}
		return nil
	case ts:
		m, ok := got.(map[string]any)
		if n, _ := m["$ts"].(json.Number); !ok || n.String() != strconv.FormatInt(int64(e), 10) {
			return fmt.Errorf("want timestamp %d µs, got %v", int64(e), got)
		}
		return nil
	case string, bool:
		if got != exp {
			return fmt.Errorf("want %T %q, got %v (%T)", exp, exp, got, got)
		}
		return nil
	case bin:
		m, ok := got.(map[string]any)
		if !ok || m["$b"] != b64(e) {
			return fmt.Errorf("want bytes %q, got %v", e, got)
		}
		return nil
	case pairs:
		l, ok := got.([]any)
		if !ok || len(l) != len(e) {
			return fmt.Errorf("want map %q, got %v", e, got)
		}
		for i, p := range e {
			kv, _ := l[i].([]any)
			if len(kv) != 2 || kv[0] != p[0] || kv[1] != p[1] {
				return fmt.Errorf("map entry %d: want %q, got %v", i, p, l[i])
			}
		}
		return nil
	case []any:
		l, ok := got.([]any)
		if !ok || len(l) != len(e) {
			return fmt.Errorf("want list of %d, got %v", len(e), got)
		}
		for i := range e {
			if err := sameValue(e[i], l[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case map[string]any:
		m, ok := got.(map[string]any)
		if !ok || len(m) != len(e) {
			return fmt.Errorf("want struct %v, got %v", e, got)
		}
		for k, v := range e {
			if err := sameValue(v, m[k]); err != nil {
				return fmt.Errorf(".%s: %w", k, err)
			}
		}
		return nil
	}
	return fmt.Errorf("oracle: unexpected %T", exp)
}

// extraMembers is the JSON object of p's members that allowed does not
// name, in order, or nil.
func extraMembers(p json.RawMessage, allowed map[string]bool) any {
	if p[0] != '{' {
		return nil
	}
	var parts []string
	for _, m := range members(p) {
		if !allowed[keyOf(m[0])] {
			parts = append(parts, compact(m[0])+":"+compact(m[1]))
		}
	}
	if parts == nil {
		return nil
	}
	return "{" + strings.Join(parts, ",") + "}"
}

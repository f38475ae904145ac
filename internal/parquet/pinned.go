package parquet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// PinnedSchema is a user-given payload schema, parsed by ParseSchema. It is
// immutable and may be shared by many Encoders.
type PinnedSchema struct {
	fields []pinnedField
}

type pinnedField struct {
	name     string
	required bool
	typ      pinnedType
}

type pinnedType struct {
	kind   kind // scalar kinds, kindStruct or kindList
	fields []pinnedField
	elem   *pinnedType
}

// ErrPinnedSchema is wrapped by every ParseSchema error.
var ErrPinnedSchema = errors.New("invalid pinned schema")

// scalarTypes are the accepted scalar type names and the kinds they map to.
var scalarTypes = map[string]kind{
	"string":    kindString,
	"bool":      kindBool,
	"boolean":   kindBool,
	"int32":     kindInt32,
	"int64":     kindInt64,
	"double":    kindDouble,
	"json":      kindJSON,
	"timestamp": kindTimestamp,
}

const acceptedTypes = `string, bool, int32, int64, double, timestamp, json, {"struct":[fields]}, {"list":type}`

// ParseSchema parses a pinned schema:
//
//	{"fields": [
//	  {"name": "level", "type": "string", "required": true},
//	  {"name": "status", "type": "int64"},
//	  {"name": "ctx", "type": {"struct": [{"name": "user", "type": "string"}]}},
//	  {"name": "tags", "type": {"list": "string"}}
//	]}
//
// Scalar types: string, bool (or boolean), int32, int64, double,
// timestamp (an RFC 3339 string, stored as TIMESTAMP(UTC, MICROS)) and
// json (any value, stored as its compact JSON text). Fields are nullable
// unless "required" is true; list elements are nullable. Names must be
// non-empty and unique among their siblings ignoring case. Errors name the
// field by its path, e.g. `fields[2] "ctx" > struct[0] "user": unknown type`.
func ParseSchema(data []byte) (*PinnedSchema, error) {
	var doc struct {
		Fields []json.RawMessage `json:"fields"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPinnedSchema, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the schema object", ErrPinnedSchema)
	}
	if len(doc.Fields) == 0 {
		return nil, fmt.Errorf(`%w: "fields" is missing or empty`, ErrPinnedSchema)
	}
	fields, err := parseFields(doc.Fields, "fields", 0)
	if err != nil {
		return nil, err
	}
	return &PinnedSchema{fields: fields}, nil
}

func parseFields(raw []json.RawMessage, at string, depth int) ([]pinnedField, error) {
	out := make([]pinnedField, 0, len(raw))
	seen := make(map[string]string, len(raw))
	for k, r := range raw {
		var f struct {
			Name     *string         `json:"name"`
			Type     json.RawMessage `json:"type"`
			Required bool            `json:"required"`
		}
		where := fmt.Sprintf("%s[%d]", at, k)
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("%w: %s: %v (a field is {\"name\", \"type\", \"required\"})", ErrPinnedSchema, where, err)
		}
		if f.Name == nil || *f.Name == "" {
			return nil, fmt.Errorf("%w: %s: \"name\" is missing or empty", ErrPinnedSchema, where)
		}
		where = fmt.Sprintf("%s %q", where, *f.Name)
		fold := strings.ToLower(*f.Name)
		if prev, dup := seen[fold]; dup {
			return nil, fmt.Errorf("%w: %s: same name as %q ignoring case (Athena, Hive and Spark would not tell them apart)", ErrPinnedSchema, where, prev)
		}
		seen[fold] = *f.Name
		if len(f.Type) == 0 {
			return nil, fmt.Errorf("%w: %s: \"type\" is missing (accepted: %s)", ErrPinnedSchema, where, acceptedTypes)
		}
		t, err := parseType(f.Type, where, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, pinnedField{name: *f.Name, required: f.Required, typ: t})
	}
	return out, nil
}

func parseType(raw json.RawMessage, where string, depth int) (pinnedType, error) {
	if depth > maxNesting {
		return pinnedType{}, fmt.Errorf("%w: %s: nested deeper than %d levels", ErrPinnedSchema, where, maxNesting)
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		k, ok := scalarTypes[name]
		if !ok {
			return pinnedType{}, fmt.Errorf("%w: %s: unknown type %q (accepted: %s)", ErrPinnedSchema, where, name, acceptedTypes)
		}
		return pinnedType{kind: k}, nil
	}
	var obj struct {
		Struct []json.RawMessage `json:"struct"`
		List   json.RawMessage   `json:"list"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil {
		return pinnedType{}, fmt.Errorf("%w: %s: type: %v (accepted: %s)", ErrPinnedSchema, where, err, acceptedTypes)
	}
	switch {
	case obj.Struct != nil && obj.List != nil:
		return pinnedType{}, fmt.Errorf("%w: %s: a type is either a struct or a list", ErrPinnedSchema, where)
	case obj.Struct != nil:
		if len(obj.Struct) == 0 {
			return pinnedType{}, fmt.Errorf("%w: %s: a struct needs at least one field", ErrPinnedSchema, where)
		}
		fields, err := parseFields(obj.Struct, where+" > struct", depth+1)
		return pinnedType{kind: kindStruct, fields: fields}, err
	case obj.List != nil:
		elem, err := parseType(obj.List, where+" > list", depth+1)
		if err != nil {
			return pinnedType{}, err
		}
		return pinnedType{kind: kindList, elem: &elem}, nil
	}
	return pinnedType{}, fmt.Errorf("%w: %s: empty type object (accepted: %s)", ErrPinnedSchema, where, acceptedTypes)
}

// node builds a fresh schema node for the pinned type.
func (t *pinnedType) node(name string, required bool) *node {
	var n *node
	switch t.kind {
	case kindStruct:
		kids := make([]*node, len(t.fields))
		for k := range t.fields {
			f := &t.fields[k]
			kids[k] = f.typ.node(f.name, f.required)
		}
		n = newStruct(kids)
	case kindList:
		n = listNode(t.elem.node("element", false))
	default:
		n = &node{kind: t.kind}
	}
	n.name, n.key, n.required = name, name, required
	return n
}

// fieldsNode returns the payload object node of a pinned schema.
func (p *PinnedSchema) fieldsNode() *node {
	t := pinnedType{kind: kindStruct, fields: p.fields}
	return t.node("", true)
}

// names lists the top-level field names.
func (p *PinnedSchema) names() []string {
	out := make([]string, len(p.fields))
	for k, f := range p.fields {
		out[k] = f.name
	}
	return out
}

package parquet

import (
	"errors"
	"fmt"
	"slices"
)

// Field is a payload column as a table knows it: its column name and type.
type Field struct {
	Name string
	Type Type
}

// Type is a column's type. Kind is one of the pinned schema's scalar
// names (bool, int32, int64, double, string, json, timestamp), "struct"
// (Fields) or "list" (Elem); json is a STRING column of JSON text.
type Type struct {
	Kind   string
	Fields []Field
	Elem   *Type
}

// Equal reports whether t and u are the same type.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || len(t.Fields) != len(u.Fields) || (t.Elem == nil) != (u.Elem == nil) {
		return false
	}
	for i := range t.Fields {
		if t.Fields[i].Name != u.Fields[i].Name || !t.Fields[i].Type.Equal(u.Fields[i].Type) {
			return false
		}
	}
	return t.Elem == nil || t.Elem.Equal(*u.Elem)
}

// ConformFunc is given a file's payload columns as pass 1 inferred them,
// before any byte is written, and returns the types to write them with:
// the same columns in the same order, each as inferred or retyped (a
// struct's members likewise). A value that does not fit its column's new
// type makes Write reject the record (ErrSchemaMismatch). An error ends
// Begin. A table uses it so that a file takes the types the table has.
type ConformFunc func(cols []Field) ([]Field, error)

// ErrConform is wrapped by Begin's errors about what a ConformFunc returned.
var ErrConform = errors.New("parquet: conform")

// fieldsOf lists a struct node's columns as Fields.
func fieldsOf(n *node) []Field {
	var out []Field
	for _, c := range n.children {
		if c.hasColumn() {
			out = append(out, Field{Name: c.name, Type: typeOf(c)})
		}
	}
	return out
}

func typeOf(n *node) Type {
	switch n.kind {
	case kindStruct:
		return Type{Kind: "struct", Fields: fieldsOf(n)}
	case kindList:
		e := typeOf(n.elem)
		return Type{Kind: "list", Elem: &e}
	}
	return Type{Kind: n.kind.String()}
}

// conform retypes the columns of the payload struct n as fn says.
func conform(n *node, fn ConformFunc) (*node, error) {
	in := fieldsOf(n)
	out, err := fn(slices.Clone(in))
	if err != nil {
		return nil, err
	}
	return retypeStruct(n, in, out, "")
}

func retypeStruct(n *node, in, out []Field, path string) (*node, error) {
	if len(out) != len(in) {
		return nil, fmt.Errorf("%w: %d columns returned for %d at %q", ErrConform, len(out), len(in), path)
	}
	kids := slices.Clone(n.children)
	k := 0
	changed := false
	for i, c := range kids {
		if !c.hasColumn() {
			continue
		}
		if out[k].Name != in[k].Name {
			return nil, fmt.Errorf("%w: column %q returned as %q", ErrConform, path+in[k].Name, out[k].Name)
		}
		r, err := retype(c, in[k].Type, out[k].Type, path+c.name)
		if err != nil {
			return nil, err
		}
		changed = changed || r != c
		kids[i] = r
		k++
	}
	if !changed {
		return n, nil
	}
	s := newStruct(kids)
	s.name, s.key, s.required = n.name, n.key, n.required
	return s, nil
}

// retype returns c as type want (c itself when it already is).
func retype(c *node, have, want Type, path string) (*node, error) {
	switch {
	case have.Equal(want):
		return c, nil
	case c.kind == kindStruct && want.Kind == "struct":
		return retypeStruct(c, have.Fields, want.Fields, path+".")
	case c.kind == kindList && want.Kind == "list" && want.Elem != nil:
		e, err := retype(c.elem, *have.Elem, *want.Elem, path+"[]")
		if err != nil {
			return nil, err
		}
		l := listNode(e)
		l.name, l.key, l.required = c.name, c.key, c.required
		return l, nil
	}
	pt, err := pinnedOf(want, path, 0)
	if err != nil {
		return nil, err
	}
	r := pt.node(c.name, false)
	r.key = c.key
	return r, nil
}

// pinnedOf converts a Type to the pinned schema's form.
func pinnedOf(t Type, path string, depth int) (pinnedType, error) {
	if depth > maxNesting {
		return pinnedType{}, fmt.Errorf("%w: %q: nested deeper than %d levels", ErrConform, path, maxNesting)
	}
	switch t.Kind {
	case "struct":
		if len(t.Fields) == 0 {
			return pinnedType{}, fmt.Errorf("%w: %q: a struct without fields", ErrConform, path)
		}
		fields := make([]pinnedField, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := pinnedOf(f.Type, path+"."+f.Name, depth+1)
			if err != nil {
				return pinnedType{}, err
			}
			fields[i] = pinnedField{name: f.Name, typ: ft}
		}
		return pinnedType{kind: kindStruct, fields: fields}, nil
	case "list":
		if t.Elem == nil {
			return pinnedType{}, fmt.Errorf("%w: %q: a list without an element type", ErrConform, path)
		}
		e, err := pinnedOf(*t.Elem, path+"[]", depth+1)
		return pinnedType{kind: kindList, elem: &e}, err
	}
	k, ok := scalarTypes[t.Kind]
	if !ok {
		return pinnedType{}, fmt.Errorf("%w: %q: unknown type %q", ErrConform, path, t.Kind)
	}
	return pinnedType{kind: k}, nil
}

package parquet

import (
	"strings"
)

// kind is what a schema node holds and how a JSON value becomes it.
type kind uint8

const (
	kindNull      kind = iota // no column: only null, [] or {} was seen (inferred schemas)
	kindBool                  // BOOLEAN
	kindInt64                 // INT64
	kindInt32                 // INT32 (pinned schemas)
	kindDouble                // DOUBLE
	kindString                // BYTE_ARRAY (STRING) from a JSON string
	kindJSON                  // BYTE_ARRAY (STRING) holding any JSON value's compact text
	kindTimestamp             // INT64 TIMESTAMP(UTC, MICROS) from an RFC 3339 string (pinned) or the message time
	kindText                  // BYTE_ARRAY (STRING): a text payload, ill-formed UTF-8 replaced
	kindBytes                 // BYTE_ARRAY: a raw payload
	kindStruct                // group
	kindList                  // LIST group, 3-level
	kindMap                   // MAP<STRING,STRING> group (the headers)
)

var kindNames = [...]string{
	kindNull: "null", kindBool: "bool", kindInt64: "int64", kindInt32: "int32",
	kindDouble: "double", kindString: "string", kindJSON: "json", kindTimestamp: "timestamp",
	kindText: "text", kindBytes: "bytes", kindStruct: "struct", kindList: "list", kindMap: "map",
}

func (k kind) String() string { return kindNames[k] }

// maxNesting bounds how deep an inferred schema nests structs and lists
// below a payload field; deeper values are kept as JSON text, so that
// definition levels always fit a byte.
const maxNesting = 32

// node is one field of the schema tree the writer shreds records into.
type node struct {
	name     string // column name (after the naming rules)
	key      string // the JSON member name it reads
	path     string // dotted path for error messages, e.g. "ctx.tags[]"
	kind     kind
	required bool

	children []*node          // kindStruct
	index    map[string]*node // kindStruct: member key -> child
	hint     []*node          // kindStruct: the child the k-th member named last time
	elem     *node            // kindList: the element

	def     uint8 // definition level of a present value of this node
	elemRep uint8 // kindList, kindMap: repetition level of the second and later elements
	leafLo  int   // leaves[leafLo:leafHi] are this node's columns
	leafHi  int
	col     *column // leaf nodes
	stamp   uint64  // kindStruct children: the object instance that last set it
}

// hasColumn reports whether the node writes at least one column.
func (n *node) hasColumn() bool { return n.kind != kindNull }

// lookup finds the child for the member named key at position pos of the
// object. Producers write members in a stable order, so the child found at
// that position last time is tried first, without hashing.
func (n *node) lookup(key []byte, pos int) *node {
	if pos < len(n.hint) {
		if c := n.hint[pos]; c != nil && c.key == string(key) {
			return c
		}
	}
	c := n.index[string(key)]
	if c != nil && pos < 64 {
		for len(n.hint) <= pos {
			n.hint = append(n.hint, nil)
		}
		n.hint[pos] = c
	}
	return c
}

func newStruct(children []*node) *node {
	n := &node{kind: kindStruct, children: children, index: make(map[string]*node, len(children))}
	for _, c := range children {
		if _, dup := n.index[c.key]; !dup {
			n.index[c.key] = c
		}
	}
	return n
}

// schema is the frozen layout of one file.
type schema struct {
	elements []schemaElement
	leaves   []*node

	// Top-level nodes the writer fills directly; nil when absent.
	offset, timestamp, stream, topic, partition *node
	headers                                     *node
	fields                                      *node // the payload object: its children are top-level columns
	payload                                     *node // text/raw payload, or non-object JSON payloads
	extra                                       *node // pinned schemas: members the schema does not name
	dropUnknown                                 bool  // pinned without extra: drop members the schema does not name
	inferred                                    bool
}

// Reserved top-level column names.
const (
	colOffset    = "offset"
	colTimestamp = "timestamp"
	colStream    = "stream"
	colTopic     = "topic"
	colPartition = "partition_id"
	colHeaders   = "headers"
	colPayload   = "payload"
	colExtra     = "payload_extra"
)

// top lists the schema's top-level nodes in column order.
func (s *schema) top() []*node {
	var out []*node
	for _, n := range []*node{s.offset, s.timestamp, s.stream, s.topic, s.partition, s.headers} {
		if n != nil {
			out = append(out, n)
		}
	}
	if s.fields != nil {
		for _, c := range s.fields.children {
			if c.hasColumn() {
				out = append(out, c)
			}
		}
	}
	for _, n := range []*node{s.payload, s.extra} {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// finish computes levels, leaf ranges and the flattened schema elements.
// The payload object's members sit at the top level, so the payload object
// itself is required (definition level 0) and has no element.
func (s *schema) finish() {
	top := s.top()
	s.elements = append(s.elements[:0], schemaElement{
		name: "schema", ptype: -1, repetition: -1, numChildren: int32(len(top)), converted: convNone,
	})
	s.leaves = s.leaves[:0]
	for _, n := range top {
		s.flatten(n, 0, 0, n.name)
	}
	if f := s.fields; f != nil {
		f.required, f.def = true, 0
		f.leafLo, f.leafHi = len(s.leaves), 0
		for _, c := range f.children {
			if c.hasColumn() {
				f.leafLo = min(f.leafLo, c.leafLo)
				f.leafHi = max(f.leafHi, c.leafHi)
			}
		}
		if f.leafHi < f.leafLo {
			f.leafLo, f.leafHi = 0, 0
		}
	}
}

// flatten appends n's elements and leaves; def and rep are its parent's
// levels when present, path its name in error messages.
func (s *schema) flatten(n *node, def, rep uint8, path string) {
	rt := repOptional
	if n.required {
		rt = repRequired
	} else {
		def++
	}
	n.def = def
	n.path = path
	n.leafLo = len(s.leaves)
	switch n.kind {
	case kindStruct:
		var kids []*node
		for _, c := range n.children {
			if c.hasColumn() {
				kids = append(kids, c)
			}
		}
		s.elements = append(s.elements, schemaElement{name: n.name, ptype: -1, repetition: rt, numChildren: int32(len(kids)), converted: convNone})
		for _, c := range kids {
			s.flatten(c, def, rep, path+"."+c.name)
		}
	case kindList, kindMap:
		conv, lt, inner := convList, logList, "list"
		if n.kind == kindMap {
			conv, lt, inner = convMap, logMap, "key_value"
		}
		s.elements = append(s.elements,
			schemaElement{name: n.name, ptype: -1, repetition: rt, numChildren: 1, converted: conv, logical: lt},
			schemaElement{name: inner, ptype: -1, repetition: repRepeated, numChildren: int32(len(n.children)), converted: convNone})
		n.elemRep = rep + 1
		for _, c := range n.children {
			if n.kind == kindList {
				s.flatten(c, def+1, rep+1, path+"[]")
			} else {
				s.flatten(c, def+1, rep+1, path+"."+c.name)
			}
		}
	default:
		e := leafElement(n, rt)
		s.elements = append(s.elements, e)
		n.col = &column{ptype: e.ptype, maxDef: def, maxRep: rep}
		s.leaves = append(s.leaves, n)
	}
	n.leafHi = len(s.leaves)
}

// leafElement is the schema element of a leaf node.
func leafElement(n *node, rt int32) schemaElement {
	e := schemaElement{name: n.name, repetition: rt, converted: convNone}
	switch n.kind {
	case kindBool:
		e.ptype = typeBoolean
	case kindInt64:
		e.ptype = typeInt64
	case kindInt32:
		e.ptype = typeInt32
	case kindDouble:
		e.ptype = typeDouble
	case kindTimestamp:
		e.ptype, e.converted, e.logical = typeInt64, convTimestampMicros, logTimestampMicrosUTC
	case kindBytes:
		e.ptype = typeByteArray
	default: // kindString, kindJSON, kindText
		e.ptype, e.converted, e.logical = typeByteArray, convUTF8, logString
	}
	return e
}

// listNode returns a LIST node whose element is elem (children[0]).
func listNode(elem *node) *node {
	elem.name, elem.key = "element", ""
	return &node{kind: kindList, elem: elem, children: []*node{elem}}
}

// mapNode returns the headers' MAP<STRING,STRING> node.
func mapNode(name string) *node {
	return &node{name: name, kind: kindMap, children: []*node{
		{name: "key", kind: kindText, required: true},
		{name: "value", kind: kindText},
	}}
}

// assignNames gives the column-bearing children their column names: the
// member name, "_" for an empty one, and a "_2", "_3", … suffix for a name
// that equals an earlier one (or a reserved one) ignoring case, since
// Athena, Hive and Spark resolve column names case-insensitively.
func assignNames(children []*node, reserved []string) {
	taken := make(map[string]bool, len(children)+len(reserved))
	for _, r := range reserved {
		taken[strings.ToLower(r)] = true
	}
	for _, c := range children {
		if !c.hasColumn() {
			continue
		}
		base := c.key
		if base == "" {
			base = "_"
		}
		name := base
		for k := 2; taken[strings.ToLower(name)]; k++ {
			name = base + "_" + itoa(k)
		}
		taken[strings.ToLower(name)] = true
		c.name = name
	}
}

func itoa(k int) string {
	if k < 10 {
		return string(rune('0' + k))
	}
	return itoa(k/10) + string(rune('0'+k%10))
}

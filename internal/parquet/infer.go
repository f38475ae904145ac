package parquet

import "github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"

// Type bits an inferred field collects over the object's records.
const (
	tNull uint8 = 1 << iota
	tBool
	tInt   // an integer literal that fits an int64
	tFloat // a fraction or exponent, or an integer beyond int64
	tString
	tObject
	tArray
	tDeep // nested deeper than maxNesting, or an object with more than maxMembers names
)

// maxMembers caps the distinct member names of an object: an object used
// as a map (keyed by ids, say) would otherwise become thousands of columns.
// Past it a nested field is kept as JSON text; at the top level, the names
// after the first maxMembers go to the payload_extra column.
const maxMembers = 1000

// inode is one field of the schema being inferred.
type inode struct {
	key   string
	mask  uint8
	kids  []*inode // first-appearance order
	index map[string]*inode
	hint  []*inode
	elem  *inode
}

// conflicted reports that the field already holds values of two kinds (or
// is too deep), so it will be a JSON column and its insides need no study.
func (n *inode) conflicted() bool {
	m := n.mask &^ tNull
	if m&(tInt|tFloat) != 0 {
		m = m&^(tInt|tFloat) | tInt
	}
	return m&tDeep != 0 || m&(m-1) != 0
}

// change is one undoable step of an observation: a type bit set, a member
// or an element node added.
type change struct {
	n    *inode
	mask uint8 // the mask before
	kid  bool  // a member was appended to n.kids
	elem bool  // n.elem was created
}

// inferrer is pass 1: it learns the union of the payloads' fields and
// types. A payload that turns out not to be valid JSON is undone, since the
// writer will reject it.
type inferrer struct {
	root      inode
	nonObject bool // some payload was not an object
	log       []change
	kbuf      []byte
	src       []byte
	sc        *jsonscan.Scanner // validates the values it does not study
}

func (f *inferrer) reset() {
	f.root = inode{}
	f.nonObject = false
	f.log = f.log[:0]
}

func (f *inferrer) observe(p []byte) {
	f.src = p
	f.log = f.log[:0]
	i := jsonscan.SkipSpace(p, 0)
	ok := false
	if i < len(p) {
		end := 0
		if p[i] == '{' {
			end = f.object(&f.root, i, 1)
		} else {
			end = f.sc.ScanValue(p, i)
		}
		ok = end >= 0 && jsonscan.SkipSpace(p, end) == len(p)
		if ok && p[i] != '{' {
			f.nonObject = true
		}
	}
	if !ok {
		f.undo()
	}
	f.src = nil
}

func (f *inferrer) undo() {
	for k := len(f.log) - 1; k >= 0; k-- {
		c := f.log[k]
		switch {
		case c.kid:
			last := c.n.kids[len(c.n.kids)-1]
			c.n.kids = c.n.kids[:len(c.n.kids)-1]
			delete(c.n.index, last.key)
			c.n.hint = c.n.hint[:0]
		case c.elem:
			c.n.elem = nil
		default:
			c.n.mask = c.mask
		}
	}
	f.log = f.log[:0]
}

func (f *inferrer) set(n *inode, bit uint8) {
	if n.mask&bit == 0 {
		f.log = append(f.log, change{n: n, mask: n.mask})
		n.mask |= bit
	}
}

// value studies the value at i; depth counts the containers above it.
func (f *inferrer) value(n *inode, i, depth int) int {
	src := f.src
	switch c := src[i]; {
	case c == '"':
		end, _ := jsonscan.ScanString(src, i)
		if end >= 0 {
			f.set(n, tString)
		}
		return end
	case c == '-' || c >= '0' && c <= '9':
		end, isInt := jsonscan.ScanNumber(src, i)
		if end < 0 {
			return end
		}
		bit := tFloat
		if isInt {
			if _, ok := parseInt64(src[i:end]); ok {
				bit = tInt
			}
		}
		f.set(n, bit)
		return end
	case c == 't' || c == 'f':
		end := 0
		if c == 't' {
			end = jsonscan.ScanLiteral(src, i, "true")
		} else {
			end = jsonscan.ScanLiteral(src, i, "false")
		}
		if end >= 0 {
			f.set(n, tBool)
		}
		return end
	case c == 'n':
		end := jsonscan.ScanLiteral(src, i, "null")
		if end >= 0 {
			f.set(n, tNull)
		}
		return end
	case c == '{' || c == '[':
		bit := tObject
		if c == '[' {
			bit = tArray
		}
		f.set(n, bit)
		if depth > maxNesting {
			f.set(n, tDeep)
		}
		if n.conflicted() {
			return f.sc.ScanValue(src, i)
		}
		if c == '{' {
			return f.object(n, i, depth+1)
		}
		return f.array(n, i, depth+1)
	}
	return ^i
}

func (f *inferrer) member(n *inode, key []byte, pos int) *inode {
	if pos < len(n.hint) {
		if c := n.hint[pos]; c != nil && c.key == string(key) {
			return c
		}
	}
	c := n.index[string(key)]
	if c == nil {
		if len(n.kids) >= maxMembers {
			f.set(n, tDeep) // the root: later names go to payload_extra
			return nil
		}
		if n.index == nil {
			n.index = make(map[string]*inode)
		}
		c = &inode{key: string(key)}
		n.index[c.key] = c
		n.kids = append(n.kids, c)
		f.log = append(f.log, change{n: n, kid: true})
	}
	if pos < 64 {
		for len(n.hint) <= pos {
			n.hint = append(n.hint, nil)
		}
		n.hint[pos] = c
	}
	return c
}

func (f *inferrer) object(n *inode, i, depth int) int {
	src := f.src
	i = jsonscan.SkipSpace(src, i+1)
	if i < len(src) && src[i] == '}' {
		return i + 1
	}
	for pos := 0; ; pos++ {
		if i >= len(src) || src[i] != '"' {
			return ^i
		}
		end, esc := jsonscan.ScanString(src, i)
		if end < 0 {
			return end
		}
		key := src[i+1 : end-1]
		if esc {
			f.kbuf = jsonscan.AppendUnquote(f.kbuf[:0], src[i:end])
			key = f.kbuf
		}
		child := f.member(n, key, pos)
		i = jsonscan.SkipSpace(src, end)
		if i >= len(src) || src[i] != ':' {
			return ^i
		}
		if i = jsonscan.SkipSpace(src, i+1); i >= len(src) {
			return ^i
		}
		if child == nil { // too many names: n is JSON text now
			i = f.sc.ScanValue(src, i)
		} else {
			i = f.value(child, i, depth)
		}
		if i < 0 {
			return i
		}
		if i = jsonscan.SkipSpace(src, i); i >= len(src) {
			return ^i
		}
		if src[i] == '}' {
			return i + 1
		}
		if src[i] != ',' {
			return ^i
		}
		i = jsonscan.SkipSpace(src, i+1)
	}
}

func (f *inferrer) array(n *inode, i, depth int) int {
	src := f.src
	i = jsonscan.SkipSpace(src, i+1)
	if i < len(src) && src[i] == ']' {
		return i + 1
	}
	if n.elem == nil {
		n.elem = &inode{}
		f.log = append(f.log, change{n: n, elem: true})
	}
	for {
		if i >= len(src) {
			return ^i
		}
		if i = f.value(n.elem, i, depth); i < 0 {
			return i
		}
		if i = jsonscan.SkipSpace(src, i); i >= len(src) {
			return ^i
		}
		if src[i] == ']' {
			return i + 1
		}
		if src[i] != ',' {
			return ^i
		}
		i = jsonscan.SkipSpace(src, i+1)
	}
}

// resolve turns what was observed into a schema node:
//
//	only null, [] or {} (or nothing)  -> no column (kindNull)
//	bool                              -> BOOLEAN
//	integers within int64             -> INT64
//	numbers with a fraction/exponent,
//	or integers beyond int64 (mixed
//	with integers or not)             -> DOUBLE
//	string                            -> STRING
//	object                            -> STRUCT of the members' union
//	array                             -> LIST of the elements' union
//	anything else (two kinds, or
//	nested deeper than maxNesting)    -> STRING holding JSON text
func resolve(in *inode) *node {
	n := &node{key: in.key}
	m := in.mask &^ tNull
	switch {
	case m == 0:
		n.kind = kindNull
	case in.conflicted():
		n.kind = kindJSON
	case m == tBool:
		n.kind = kindBool
	case m == tInt:
		n.kind = kindInt64
	case m&^(tInt|tFloat) == 0:
		n.kind = kindDouble
	case m == tString:
		n.kind = kindString
	case m == tObject:
		n = resolveStruct(in, nil)
	case m == tArray:
		if in.elem == nil {
			n.kind = kindNull
			break
		}
		el := resolve(in.elem)
		if !el.hasColumn() {
			n.kind = kindNull
			break
		}
		n = listNode(el)
		n.key = in.key
	}
	return n
}

// resolveStruct resolves an object's members; reserved names are taken
// before the members are named. A struct without any column is kindNull.
func resolveStruct(in *inode, reserved []string) *node {
	kids := make([]*node, len(in.kids))
	cols := 0
	for k, c := range in.kids {
		kids[k] = resolve(c)
		if kids[k].hasColumn() {
			cols++
		}
	}
	n := newStruct(kids)
	n.key = in.key
	assignNames(kids, reserved)
	if cols == 0 {
		n.kind = kindNull
	}
	return n
}

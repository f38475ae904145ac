package jsonscan

// Lookup finds the value at path in doc, a compact, validated JSON value:
// each element of path names a member of an object, outermost first (a
// member name is compared with its text, escapes decoded). It returns the
// value's literal doc[start:end], or ok false when doc is not an object,
// a member is missing, or a value on the way is not an object. When a name
// occurs twice in one object, the last one counts, as encoding/json and
// serde_json decode it.
func Lookup(doc []byte, path []string) (start, end int, ok bool) {
	start, end = 0, len(doc)
	for _, name := range path {
		if start >= end || doc[start] != '{' {
			return 0, 0, false
		}
		s, e, found := member(doc[:end], start, name)
		if !found {
			return 0, 0, false
		}
		start, end = s, e
	}
	return start, end, len(path) > 0
}

// LookupMembers is Lookup in doc whose top-level members (as a Scanner
// with Record noted them) are members: the first name of path is found
// among them without reading their values.
func LookupMembers(doc []byte, members []Member, path []string) (start, end int, ok bool) {
	if len(path) == 0 {
		return 0, 0, false
	}
	var text []byte
	for i := len(members) - 1; i >= 0; i-- { // the last one of a name counts
		m := members[i]
		lit := doc[m.KeyStart:m.KeyEnd]
		same := string(lit[1:len(lit)-1]) == path[0]
		if NeedsUnquote(lit) {
			text = AppendUnquote(text[:0], lit)
			same = string(text) == path[0]
		}
		if !same {
			continue
		}
		if len(path) == 1 {
			return m.ValStart, m.ValEnd, true
		}
		s, e, found := Lookup(doc[m.ValStart:m.ValEnd], path[1:])
		return m.ValStart + s, m.ValStart + e, found
	}
	return 0, 0, false
}

// member returns the span of the last member called name of the object
// starting at doc[i].
func member(doc []byte, i int, name string) (start, end int, found bool) {
	var text []byte
	j := i + 1
	for j < len(doc) && doc[j] != '}' {
		if doc[j] == ',' {
			j++
		}
		keyEnd, err := SkipString(doc, j)
		if err != nil || keyEnd >= len(doc) || doc[keyEnd] != ':' {
			return 0, 0, false
		}
		lit := doc[j:keyEnd]
		same := string(lit[1:len(lit)-1]) == name
		if NeedsUnquote(lit) {
			text = AppendUnquote(text[:0], lit)
			same = string(text) == name
		}
		valEnd, err := SkipValue(doc, keyEnd+1)
		if err != nil {
			return 0, 0, false
		}
		if same {
			start, end, found = keyEnd+1, valEnd, true
		}
		j = valEnd
	}
	return start, end, found
}

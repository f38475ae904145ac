package keys

import (
	"strconv"
	"strings"
)

// Matcher returns whether a listed key lies in one of this partition's
// folders under the data prefix: the path template rendered for its stream,
// topic and partition at some time. A listing prefix stops at the first
// time field, so with a time-first template ("dt={date}/{stream}/{topic}")
// it covers every topic's objects, and another sink's under the same
// prefix; a key's file name alone (ParseName) does not tell whose it is.
func (p PartitionNamer) Matcher() func(key string) bool { return p.path.matcher(p.n.prefix) }

// ErrorsMatcher is Matcher for this partition's error objects; it matches
// nothing when the Namer names none.
func (p PartitionNamer) ErrorsMatcher() func(key string) bool {
	if !p.n.hasErrors {
		return func(string) bool { return false }
	}
	return p.path.matcher(p.n.errPrefix)
}

// atom is one part of a folder pattern: fixed text, or a run of digits
// (a time field) of at least min and at most max digits, after an
// optional '+' when plus is set (years past 9999, as appendYear writes).
type atom struct {
	text     string
	digits   bool
	min, max int
	plus     bool
	// segment is a payload value: one or more bytes other than '/'.
	segment bool
}

// matcher is Matcher under prefix.
func (pp partitionPath) matcher(prefix string) func(key string) bool {
	var atoms []atom
	fixed := func(s string) { atoms = append(atoms, atom{text: s}) }
	year := atom{digits: true, min: 4, max: 20, plus: true}
	two := atom{digits: true, min: 2, max: 2}
	fixed(string(appendPrefix(nil, prefix)))
	for _, s := range pp.tpl.segments {
		switch s.kind {
		case literal:
			fixed(s.text)
		case phStream:
			fixed(string(appendSegment(nil, pp.stream)))
		case phTopic:
			fixed(string(appendSegment(nil, pp.topic)))
		case phPartition:
			fixed(strconv.FormatUint(uint64(pp.partition), 10))
		case phDate:
			atoms = append(atoms, year, atom{text: "-"}, two, atom{text: "-"}, two)
		case phYear:
			atoms = append(atoms, year)
		case phHour, phMonth, phDay, phMinute:
			atoms = append(atoms, two)
		case phTimestamp:
			atoms = append(atoms, atom{digits: true, min: 1, max: 20})
		case phPayload:
			atoms = append(atoms, atom{segment: true})
		}
	}
	return func(key string) bool {
		slash := strings.LastIndexByte(key, '/')
		if slash < 0 || slash == len(key)-1 {
			return false
		}
		m := atomMatch{atoms: atoms, failed: map[[2]int]bool{}}
		return m.match(0, key[:slash])
	}
}

// atomMatch matches a folder against atoms; failed remembers the (atom,
// rest length) pairs that did not match, so that trying each width of
// several variable digit runs stays linear in the key's length.
type atomMatch struct {
	atoms  []atom
	failed map[[2]int]bool
}

// match reports whether dir is exactly atoms[from:]; a digit run that may
// vary in width tries each width, so "{timestamp}1" still matches.
func (m *atomMatch) match(from int, dir string) bool {
	if m.failed[[2]int{from, len(dir)}] {
		return false
	}
	ok := m.walk(from, dir)
	if !ok {
		m.failed[[2]int{from, len(dir)}] = true
	}
	return ok
}

func (m *atomMatch) walk(from int, dir string) bool {
	for i := from; i < len(m.atoms); i++ {
		a := m.atoms[i]
		if a.segment {
			n := strings.IndexByte(dir, '/')
			if n < 0 {
				n = len(dir)
			}
			for w := n; w >= 1; w-- {
				if m.match(i+1, dir[w:]) {
					return true
				}
			}
			return false
		}
		if !a.digits {
			if !strings.HasPrefix(dir, a.text) {
				return false
			}
			dir = dir[len(a.text):]
			continue
		}
		if a.plus && strings.HasPrefix(dir, "+") {
			dir = dir[1:]
		}
		n := 0
		for n < len(dir) && n < a.max && dir[n] >= '0' && dir[n] <= '9' {
			n++
		}
		if a.min == a.max {
			if n < a.min {
				return false
			}
			dir = dir[a.min:]
			continue
		}
		for w := n; w >= a.min; w-- {
			if m.match(i+1, dir[w:]) {
				return true
			}
		}
		return false
	}
	return dir == ""
}

// Listing is where to list this partition's objects and markers from the
// object with first offset from on: (prefix, startAfter) pairs for an S3
// listing. A template without a time field puts all of a partition's keys
// in one folder, named by partition and first offset, so two listings
// bound it: the data objects' and the markers' ("_"), each starting at
// from. Under payload fields that folder is the unit folder, which holds
// the markers and the units' manifests (and the default value's objects).
// With a time field the folders vary, and the listing is ListPrefix's,
// whole (ListingAt bounds one of its folders).
func (p PartitionNamer) Listing(from uint64) [][2]string {
	if p.TimeFolders() {
		return [][2]string{{p.ListPrefix(), ""}}
	}
	dst := p.path.appendFolder(nil, p.n.prefix, 0)
	return p.path.bounded(string(append(dst, '/')), from)
}

// TimeFolders reports whether the path template has a time field, so that
// a partition's keys spread over folders by server time.
func (p PartitionNamer) TimeFolders() bool {
	for _, s := range p.n.tpl.segments {
		if s.kind.isTime() {
			return true
		}
	}
	return false
}

// ListingAt is Listing for the one folder the path template renders for
// server time tsMicros, bounded like a time-free template's: the keys of
// this partition in that folder from first offset from on.
func (p PartitionNamer) ListingAt(from, tsMicros uint64) [][2]string {
	dst := p.path.appendFolder(nil, p.n.prefix, tsMicros)
	return p.path.bounded(string(append(dst, '/')), from)
}

// bounded is the listing of the partition's keys in folder (which ends in
// '/') from first offset from on: its data objects' and its markers'.
func (pp partitionPath) bounded(folder string, from uint64) [][2]string {
	name := string(appendPadded(nil, uint64(pp.partition), 5)) + "-"
	// Keys of first offsets below from sort before this; from's own
	// objects sort after it (it is a prefix of their names).
	start := name + string(appendPadded(nil, from, 20))
	if from == 0 {
		start = ""
	}
	out := make([][2]string, 0, 2)
	for _, mark := range []string{"", "_"} {
		sa := ""
		if start != "" {
			sa = folder + mark + start
		}
		out = append(out, [2]string{folder + mark + name, sa})
	}
	return out
}

// Package iggyref reads how the configuration names a stream or topic: a
// name, a numeric id (as upstream reads digits), or "name:<text>" for a name.
package iggyref

import "strings"

// NamePrefix forces the rest of a value to be read as a name, for streams
// and topics whose names are digits ("name:1" is the topic named "1").
const NamePrefix = "name:"

// Ref is a configured stream or topic.
type Ref struct {
	// Name is the name to look up when ByID is false.
	Name string
	// ID is the numeric id to look up when ByID is true.
	ID   uint32
	ByID bool
}

// Parse reads a configured value: "name:" + text is the name text (even
// when it is digits, or itself starts with "name:"); a value of 1 to 10
// decimal digits that fits in 32 bits is an id; anything else is a name.
func Parse(s string) Ref {
	if rest, ok := strings.CutPrefix(s, NamePrefix); ok {
		return Ref{Name: rest}
	}
	if n, ok := numeric(s); ok {
		return Ref{ID: n, ByID: true}
	}
	return Ref{Name: s}
}

func numeric(s string) (uint32, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + uint64(s[i]-'0')
	}
	if n > 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

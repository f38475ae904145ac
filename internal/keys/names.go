package keys

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidPrefix is wrapped by every error CheckPrefix returns.
var ErrInvalidPrefix = errors.New("invalid key prefix")

// Segment is how a stream or topic name appears in a key: upstream's
// sanitising (every character outside [A-Za-z0-9._-] becomes one '_'),
// except for the names that would make a path segment mean "here" or "up"
// (".", "..") or vanish (""): those become one '_' per character (at least
// one), so no name can lead a key out of the prefix. Names that are already
// safe render byte for byte as upstream renders them.
func Segment(name string) string {
	if isSafeName(name) {
		return name
	}
	return string(appendSegment(make([]byte, 0, len(name)+1), name))
}

func isSafeName(name string) bool {
	if name == "" || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isSafe(name[i]) {
			return false
		}
	}
	return true
}

func appendSegment(dst []byte, name string) []byte {
	switch name {
	case "", ".":
		return append(dst, '_')
	case "..":
		return append(dst, "__"...)
	}
	return appendSanitized(dst, name)
}

// CheckPrefix refuses a prefix that would put a key outside it or give it an
// empty path segment: after trimming '/' at both ends (as upstream does),
// every '/'-separated part must be non-empty and neither "." nor "..".
func CheckPrefix(prefix string) error {
	p := strings.Trim(prefix, "/")
	if p == "" {
		return nil
	}
	for i, part := range strings.Split(p, "/") {
		if err := checkLiteralSegment(part); err != nil {
			return fmt.Errorf("%w: part %d of %q %s", ErrInvalidPrefix, i+1, p, err)
		}
	}
	return nil
}

// checkLiteralSegment says what is wrong with a fixed path segment, if anything.
func checkLiteralSegment(s string) error {
	switch s {
	case "":
		return errors.New(`is empty (a leading, trailing or doubled '/'); S3 consoles and tools treat such keys inconsistently`)
	case ".", "..":
		return fmt.Errorf(`is %q; stores and tools that resolve paths would move the key out of its place`, s)
	}
	return nil
}

// checkSegments refuses templates whose keys could leave the prefix, hold an
// empty path segment, or be the same for two different streams or topics:
// every '/'-separated part must be non-empty, a part of fixed text must not be
// "." or "..", and a part holding {stream}, {topic} or a payload field
// must hold no other placeholder of varying width ({stream}, {topic},
// {timestamp}, payload fields) — otherwise "a-b"+"c" and "a"+"b-c" give
// the same key.
func (t *Template) checkSegments() error {
	var (
		text   strings.Builder // the part as written, for messages
		lit    strings.Builder // its fixed text
		phs    []segment
		number = 1
	)
	flush := func() error {
		defer func() { text.Reset(); lit.Reset(); phs = phs[:0]; number++ }()
		if len(phs) == 0 {
			if err := checkLiteralSegment(lit.String()); err != nil {
				return fmt.Errorf("%w: path part %d (%q) %s", ErrInvalidTemplate, number, text.String(), err)
			}
			return nil
		}
		var names, varying []string
		for _, p := range phs {
			switch p.kind {
			case phStream, phTopic, phPayload:
				names = append(names, p.name())
				varying = append(varying, p.name())
			case phTimestamp:
				varying = append(varying, p.name())
			}
		}
		if len(names) > 0 && len(varying) > 1 {
			return fmt.Errorf("%w: path part %d (%q) holds %s together: two different names could give the same key (\"a-b\" + \"c\" and \"a\" + \"b-c\"); separate them with '/'",
				ErrInvalidTemplate, number, text.String(), strings.Join(varying, " and "))
		}
		return nil
	}
	for _, s := range t.segments {
		if s.kind != literal {
			phs = append(phs, s)
			text.WriteString(s.name())
			continue
		}
		for i, part := range strings.Split(s.text, "/") {
			if i > 0 {
				if err := flush(); err != nil {
					return err
				}
			}
			text.WriteString(part)
			lit.WriteString(part)
		}
	}
	return flush()
}

// Pair is one configured stream and topic, by name.
type Pair struct{ Stream, Topic string }

// CollisionError reports two different (stream, topic) pairs whose objects
// would get the same keys under a template: the names render to the same key
// segments, or the template does not tell them apart.
type CollisionError struct {
	A, B Pair
	// Segments is what both render to, e.g. `{stream}="app" {topic}="orders_v2"`.
	Segments string
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("stream %q topic %q and stream %q topic %q would be written under the same keys (%s): their objects would overwrite each other",
		e.A.Stream, e.A.Topic, e.B.Stream, e.B.Topic, e.Segments)
}

// Collision returns the first two pairs whose keys would be the same, or nil.
// Only {stream} and {topic} tell pairs apart, so a template without either
// makes every two pairs collide on it.
func (t *Template) Collision(pairs []Pair) *CollisionError {
	hasStream, hasTopic := t.has(phStream), t.has(phTopic)
	seen := make(map[Pair]Pair, len(pairs))
	for _, p := range pairs {
		var id Pair
		if hasStream {
			id.Stream = Segment(p.Stream)
		}
		if hasTopic {
			id.Topic = Segment(p.Topic)
		}
		if q, dup := seen[id]; dup && q != p {
			var segs []string
			if hasStream {
				segs = append(segs, fmt.Sprintf("{stream}=%q", id.Stream))
			}
			if hasTopic {
				segs = append(segs, fmt.Sprintf("{topic}=%q", id.Topic))
			}
			if len(segs) == 0 {
				segs = append(segs, "the path template has neither {stream} nor {topic}")
			}
			return &CollisionError{A: q, B: p, Segments: strings.Join(segs, " ")}
		}
		if _, dup := seen[id]; !dup {
			seen[id] = p
		}
	}
	return nil
}

func (t *Template) has(k placeholder) bool {
	for _, s := range t.segments {
		if s.kind == k {
			return true
		}
	}
	return false
}

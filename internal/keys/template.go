package keys

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidTemplate is wrapped by every error ParseTemplate returns.
var ErrInvalidTemplate = errors.New("invalid path template")

type placeholder uint8

const (
	literal placeholder = iota
	phStream
	phTopic
	phPartition
	phDate
	phHour
	phTimestamp
	phYear
	phMonth
	phDay
	phMinute
	// phPayload is a {payload.<path>}: a field of the (transformed) JSON
	// payload; segment.field says which of the template's fields.
	phPayload
)

// placeholderNames is in documentation order; the index is the placeholder value.
var placeholderNames = [...]string{
	phStream:    "stream",
	phTopic:     "topic",
	phPartition: "partition",
	phDate:      "date",
	phHour:      "hour",
	phTimestamp: "timestamp",
	phYear:      "year",
	phMonth:     "month",
	phDay:       "day",
	phMinute:    "minute",
}

// Placeholders returns the placeholders a path template may use, braces included.
func Placeholders() []string {
	out := make([]string, 0, len(placeholderNames)-1)
	for _, n := range placeholderNames[1:] {
		out = append(out, "{"+n+"}")
	}
	return out
}

type segment struct {
	kind placeholder
	text string // literal text; the dotted path of a payload field
	// field indexes Template.fields for phPayload.
	field int
}

// payloadPrefix starts a payload field placeholder: {payload.country}.
const payloadPrefix = "payload."

// PayloadPlaceholder is how the configuration names a payload field
// placeholder, for documentation and messages.
const PayloadPlaceholder = "{payload.<path>}"

// Template is a parsed path_template. Parsing happens once, at configuration
// time, so rendering a key per object is a walk over segments.
type Template struct {
	src      string
	segments []segment
	// fields are the distinct payload field paths, in the order the
	// template first names them.
	fields [][]string
	// parts are the segments by path part (the literals cut at '/'), and
	// valueParts the indexes of those holding a payload field: a value's
	// folder differs from its unit's in those parts only.
	parts      [][]segment
	valueParts []int
}

// ParseTemplate parses a path template such as "{stream}/{topic}/{date}/{hour}".
func ParseTemplate(s string) (*Template, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: template is empty; use e.g. %q", ErrInvalidTemplate, "{stream}/{topic}/{date}/{hour}")
	}
	t := &Template{src: s}
	rest := s
	pos := 0
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.segments = append(t.segments, segment{text: rest})
			break
		}
		if i > 0 {
			t.segments = append(t.segments, segment{text: rest[:i]})
		}
		if rest[i] == '}' {
			return nil, fmt.Errorf("%w: '}' at byte %d has no matching '{'", ErrInvalidTemplate, pos+i)
		}
		end := strings.IndexAny(rest[i+1:], "{}")
		if end < 0 || rest[i+1+end] == '{' {
			return nil, fmt.Errorf("%w: '{' at byte %d is not closed by '}'", ErrInvalidTemplate, pos+i)
		}
		name := rest[i+1 : i+1+end]
		seg, err := t.placeholder(name)
		if err != nil {
			return nil, err
		}
		t.segments = append(t.segments, seg)
		consumed := i + 1 + end + 1
		rest = rest[consumed:]
		pos += consumed
	}
	if err := t.checkSegments(); err != nil {
		return nil, err
	}
	t.splitParts()
	return t, nil
}

// splitParts fills parts and valueParts.
func (t *Template) splitParts() {
	cur := []segment{}
	for _, s := range t.segments {
		if s.kind != literal {
			cur = append(cur, s)
			continue
		}
		for i, text := range strings.Split(s.text, "/") {
			if i > 0 {
				t.parts, cur = append(t.parts, cur), []segment{}
			}
			if text != "" {
				cur = append(cur, segment{text: text})
			}
		}
	}
	t.parts = append(t.parts, cur)
	for i, part := range t.parts {
		for _, s := range part {
			if s.kind == phPayload {
				t.valueParts = append(t.valueParts, i)
				break
			}
		}
	}
}

// placeholder parses the name between a pair of braces.
func (t *Template) placeholder(name string) (segment, error) {
	if path, ok := strings.CutPrefix(name, payloadPrefix); ok {
		parts := strings.Split(path, ".")
		for _, p := range parts {
			if p == "" {
				return segment{}, fmt.Errorf("%w: {%s} needs a dotted path of member names after %q, e.g. {payload.country} or {payload.user.tier}",
					ErrInvalidTemplate, name, payloadPrefix)
			}
		}
		for i, f := range t.fields {
			if strings.Join(f, ".") == path {
				return segment{kind: phPayload, text: path, field: i}, nil
			}
		}
		t.fields = append(t.fields, parts)
		return segment{kind: phPayload, text: path, field: len(t.fields) - 1}, nil
	}
	kind := lookupPlaceholder(name)
	if kind == literal {
		return segment{}, fmt.Errorf("%w: unknown placeholder {%s}; valid placeholders are %s %s",
			ErrInvalidTemplate, name, strings.Join(Placeholders(), " "), PayloadPlaceholder)
	}
	return segment{kind: kind}, nil
}

// PayloadFields returns the payload fields the template names, each a path
// of member names ({payload.user.tier} is ["user", "tier"]), distinct, in
// the order the template first names them; nil when it names none.
func (t *Template) PayloadFields() [][]string { return t.fields }

// name is how the template writes a placeholder, braces included.
func (s segment) name() string {
	if s.kind == phPayload {
		return "{" + payloadPrefix + s.text + "}"
	}
	return "{" + placeholderNames[s.kind] + "}"
}

// isTime reports the calendar and timestamp placeholders, whose folders
// vary with the server time.
func (k placeholder) isTime() bool { return k >= phDate && k <= phMinute }

func lookupPlaceholder(name string) placeholder {
	for i, n := range placeholderNames {
		if i > 0 && n == name {
			return placeholder(i)
		}
	}
	return literal
}

// String returns the template as written.
func (t *Template) String() string { return t.src }

// Period is a span of UTC calendar time that a template's folders change with.
type Period uint8

// The periods, finest first; PeriodNone is a template without calendar fields.
const (
	PeriodNone Period = iota
	PeriodMinute
	PeriodHour
	PeriodDay
	PeriodMonth
	PeriodYear
)

// String names the period as Iceberg's time transforms do ("hour", "day").
func (p Period) String() string {
	return [...]string{"none", "minute", "hour", "day", "month", "year"}[p]
}

// Period is the finest calendar field the template names: objects of two
// periods go to two folders. {timestamp} names no period (it is the
// object's own time, not a folder's).
func (t *Template) Period() Period {
	finest := PeriodNone
	for _, s := range t.segments {
		var p Period
		switch s.kind {
		case phMinute:
			p = PeriodMinute
		case phHour:
			p = PeriodHour
		case phDate, phDay:
			p = PeriodDay
		case phMonth:
			p = PeriodMonth
		case phYear:
			p = PeriodYear
		default:
			continue
		}
		if finest == PeriodNone || p < finest {
			finest = p
		}
	}
	return finest
}

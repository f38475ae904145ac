package transform

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// Pipeline applies the enabled transforms of a config in file order.
// It is safe for concurrent use.
type Pipeline struct {
	steps []step
	pool  sync.Pool // *state, so the common path allocates nothing per message
}

// NewPipeline validates specs and builds their steps in the given order,
// skipping disabled ones. Nil or empty specs give a pipeline with Len()==0.
func NewPipeline(specs []Spec) (*Pipeline, error) {
	p := &Pipeline{}
	seen := map[string]bool{}
	for _, s := range specs {
		if seen[s.Type] {
			return nil, &ConfigError{Transform: s.Type, Reason: "appears more than once"}
		}
		seen[s.Type] = true
		st, err := parseSpec(s)
		if err != nil {
			return nil, err
		}
		if st != nil {
			p.steps = append(p.steps, st)
		}
	}
	p.pool.New = func() any { return &state{members: make([]member, 0, 32)} }
	return p, nil
}

// Len is the number of enabled transforms.
func (p *Pipeline) Len() int {
	if p == nil {
		return 0
	}
	return len(p.steps)
}

// Transform appends payload, rewritten by the pipeline, to dst. payload must
// be valid compact JSON; the result is too. A payload that is not a JSON
// object is appended unchanged, as upstream passes it through.
func (p *Pipeline) Transform(dst, payload []byte, stream, topic string, partition uint32, offset, timestampMicros uint64) ([]byte, error) {
	if p.Len() == 0 {
		return append(dst, payload...), nil
	}
	if i := jsonscan.SkipSpace(payload, 0); i >= len(payload) || payload[i] != '{' {
		return append(dst, payload...), nil
	}
	return p.run(dst, payload, nil, stream, topic, partition, offset, timestampMicros)
}

// TransformMembers implements batch.MemberTransformer: payload is a compact
// JSON object whose top-level members the encoder's scan already located,
// so it is not scanned again.
func (p *Pipeline) TransformMembers(dst, payload []byte, members []jsonscan.Member, stream, topic string, partition uint32, offset, timestampMicros uint64) ([]byte, error) {
	if p.Len() == 0 {
		return append(dst, payload...), nil
	}
	return p.run(dst, payload, members, stream, topic, partition, offset, timestampMicros)
}

// run applies the steps to one object, splitting it itself unless the
// members are given.
func (p *Pipeline) run(dst, payload []byte, members []jsonscan.Member, stream, topic string, partition uint32, offset, timestampMicros uint64) ([]byte, error) {
	st := p.pool.Get().(*state)
	defer func() {
		st.reset() // drop references to this payload before pooling
		p.pool.Put(st)
	}()
	if members != nil {
		for _, bm := range members {
			key := payload[bm.KeyStart:bm.KeyEnd]
			st.members = append(st.members, member{key: key, val: payload[bm.ValStart:bm.ValEnd], plain: !jsonscan.NeedsUnquote(key)})
		}
	} else {
		var err error
		if st.members, err = scanObject(st.members, payload); err != nil {
			return dst, fmt.Errorf("transform: stream %q topic %q partition %d offset %d: %w", stream, topic, partition, offset, err)
		}
	}
	// The metadata lives in the pooled state: a local would escape through
	// the step interface and cost an allocation per message.
	st.meta = msgMeta{stream: stream, topic: topic, partition: partition, offset: offset, timestampMicros: timestampMicros}
	m := &st.meta
	for _, s := range p.steps {
		if st.mode != modeObject {
			break // every transform passes non-objects through
		}
		if err := s.apply(st, m); err != nil {
			return dst, fmt.Errorf("transform: stream %q topic %q partition %d offset %d: %w", stream, topic, partition, offset, err)
		}
	}
	return st.render(dst, m), nil
}

type docMode uint8

const (
	modeObject   docMode = iota // members hold the document
	modeValue                   // val holds the document (after unwrap_envelope)
	modeComputed                // comp renders the document (unwrap of a computed field)
)

// state is one message's document while the steps rewrite it.
type state struct {
	mode    docMode
	members []member
	val     []byte
	comp    computed
	keyBuf  []byte // unescaped key, reused across members
	valBuf  []byte // unescaped string value or rendered computed value
	meta    msgMeta
}

func (st *state) reset() {
	st.mode = modeObject
	clear(st.members) // drop references to the previous payload
	st.members = st.members[:0]
	st.val = nil
	st.comp = compNone
	st.meta = msgMeta{}
}

func (st *state) render(dst []byte, m *msgMeta) []byte {
	switch st.mode {
	case modeValue:
		return append(dst, st.val...)
	case modeComputed:
		return st.comp.appendTo(dst, m)
	}
	dst = append(dst, '{')
	for i := range st.members {
		mb := &st.members[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, mb.key...)
		dst = append(dst, ':')
		if mb.comp != compNone {
			dst = mb.comp.appendTo(dst, m)
		} else {
			dst = append(dst, mb.val...)
		}
	}
	return append(dst, '}')
}

// keyText is the member's key with escapes resolved.
func (st *state) keyText(raw []byte) []byte {
	if !jsonscan.NeedsUnquote(raw) {
		return raw[1 : len(raw)-1]
	}
	st.keyBuf = jsonscan.AppendUnquote(st.keyBuf[:0], raw)
	return st.keyBuf
}

// valueText is the member's value as JSON text, rendering a computed one.
func (st *state) valueText(mb *member, m *msgMeta) []byte {
	if mb.comp == compNone {
		return mb.val
	}
	st.valBuf = mb.comp.appendTo(st.valBuf[:0], m)
	return st.valBuf
}

// keyName is a configured key, pre-quoted for the byte-equality fast path.
type keyName struct {
	name   string
	quoted []byte
	plain  bool // see member.plain
}

func newKeyName(s string) keyName {
	q := appendQuote(nil, s)
	return keyName{name: s, quoted: q, plain: !jsonscan.NeedsUnquote(q)}
}

// is reports whether the member mb is named k.
func (st *state) is(mb *member, k *keyName) bool {
	if bytes.Equal(mb.key, k.quoted) {
		return true
	}
	if mb.plain {
		return false
	}
	return string(st.keyText(mb.key)) == k.name
}

func (st *state) find(k *keyName) int {
	for i := range st.members {
		if st.is(&st.members[i], k) {
			return i
		}
	}
	return -1
}

// removeFrom drops every member named k at index from or later.
func (st *state) removeFrom(from int, k *keyName) {
	w := from
	for i := from; i < len(st.members); i++ {
		if !st.is(&st.members[i], k) {
			st.members[w] = st.members[i]
			w++
		}
	}
	clear(st.members[w:])
	st.members = st.members[:w]
}

type step interface {
	apply(st *state, m *msgMeta) error
}

type condition uint8

const (
	condAlways condition = iota
	condKeyExists
	condKeyNotExists
)

type fieldValue struct {
	static []byte // pre-rendered JSON, or nil when comp is set
	comp   computed
}

type setField struct {
	key  keyName
	val  fieldValue
	cond condition
}

// setFields is add_fields (every condition "always") and update_fields.
type setFields struct{ fields []setField }

func (s *setFields) apply(st *state, _ *msgMeta) error {
	for i := range s.fields {
		f := &s.fields[i]
		at := st.find(&f.key)
		switch {
		case f.cond == condKeyExists && at < 0, f.cond == condKeyNotExists && at >= 0:
			continue
		case at < 0:
			st.members = append(st.members, member{key: f.key.quoted, plain: f.key.plain, val: f.val.static, comp: f.val.comp})
		default:
			// Overwrite in place to keep the key order, and drop duplicate
			// keys after it, so the result holds the key once, as a map would.
			st.members[at].val, st.members[at].comp = f.val.static, f.val.comp
			st.removeFrom(at+1, &f.key)
		}
	}
	return nil
}

type deleteFields struct{ keys []keyName }

func (d *deleteFields) apply(st *state, _ *msgMeta) error {
	w := 0
	for i := range st.members {
		drop := false
		for j := range d.keys {
			if st.is(&st.members[i], &d.keys[j]) {
				drop = true
				break
			}
		}
		if !drop {
			st.members[w] = st.members[i]
			w++
		}
	}
	clear(st.members[w:])
	st.members = st.members[:w]
	return nil
}

type filterFields struct {
	keep     []keyName
	patterns []pattern
	include  bool
}

func (f *filterFields) apply(st *state, m *msgMeta) error {
	if len(f.keep) == 0 && len(f.patterns) == 0 {
		return nil // upstream leaves the object alone
	}
	w := 0
	for i := range st.members {
		if f.retain(st, &st.members[i], m) {
			st.members[w] = st.members[i]
			w++
		}
	}
	clear(st.members[w:])
	st.members = st.members[:w]
	return nil
}

func (f *filterFields) retain(st *state, mb *member, m *msgMeta) bool {
	for j := range f.keep {
		if st.is(mb, &f.keep[j]) {
			return true
		}
	}
	matched := false
	for j := range f.patterns {
		p := &f.patterns[j]
		if p.key != nil && !p.key.match(st.keyText(mb.key)) {
			continue
		}
		if p.value != nil {
			// keyBuf is free by now and valBuf may hold the value itself.
			if !p.value.match(st.valueText(mb, m), &st.keyBuf) {
				continue
			}
		}
		matched = true
		break
	}
	return matched == f.include
}

type unwrapEnvelope struct{ key keyName }

func (u *unwrapEnvelope) apply(st *state, _ *msgMeta) error {
	at := -1
	// The last duplicate wins, as it does when a parser builds a map.
	for i := range st.members {
		if st.is(&st.members[i], &u.key) {
			at = i
		}
	}
	if at < 0 {
		return nil // upstream passes the message through unchanged
	}
	inner := st.members[at]
	switch {
	case inner.comp != compNone:
		st.mode, st.comp = modeComputed, inner.comp
	case len(inner.val) > 0 && inner.val[0] == '{':
		clear(st.members)
		var err error
		if st.members, err = scanObject(st.members[:0], inner.val); err != nil {
			return fmt.Errorf("unwrap_envelope %q: %w", u.key.name, err)
		}
	default:
		st.mode, st.val = modeValue, inner.val
	}
	return nil
}

package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

type keyKind uint8

const (
	keyExact keyKind = iota
	keyStartsWith
	keyEndsWith
	keyContains
	keyRegex
)

const keyKinds = "exact, starts_with, ends_with, contains, regex"

// keyMatcher tests a decoded object key.
type keyMatcher struct {
	kind keyKind
	s    []byte
	re   *regexp.Regexp
}

func (m *keyMatcher) match(k []byte) bool {
	switch m.kind {
	case keyExact:
		return bytes.Equal(k, m.s)
	case keyStartsWith:
		return bytes.HasPrefix(k, m.s)
	case keyEndsWith:
		return bytes.HasSuffix(k, m.s)
	case keyContains:
		return bytes.Contains(k, m.s)
	default:
		return m.re.Match(k)
	}
}

type valueKind uint8

const (
	valEquals valueKind = iota
	valContains
	valRegex
	valGreaterThan
	valLessThan
	valBetween
	valIsNull
	valIsNotNull
	valIsString
	valIsNumber
	valIsBoolean
	valIsObject
	valIsArray
)

const valueKinds = "equals, contains, regex, greater_than, less_than, between, is_null, is_not_null, is_string, is_number, is_boolean, is_object, is_array"

var typeChecks = map[string]valueKind{
	"is_null":     valIsNull,
	"is_not_null": valIsNotNull,
	"is_string":   valIsString,
	"is_number":   valIsNumber,
	"is_boolean":  valIsBoolean,
	"is_object":   valIsObject,
	"is_array":    valIsArray,
}

// valueMatcher tests a value given as its JSON text.
type valueMatcher struct {
	kind valueKind
	s    []byte
	re   *regexp.Regexp
	a, b float64
	want any // for equals: string, bool, jsonNumber, []any or map[string]any
}

// jsonNumber is a number kept exact when it is an integer.
type jsonNumber struct {
	isInt bool
	i     int64
	f     float64
}

// pattern matches a field when every part it has matches.
type pattern struct {
	key   *keyMatcher
	value *valueMatcher
}

func (p parser) keyPattern(v any, path string) (keyMatcher, error) {
	if _, ok := v.(string); ok {
		return keyMatcher{}, p.errf(path, "must be a table with one of: %s, e.g. {exact = \"id\"}", keyKinds)
	}
	kind, arg, err := p.single(v, path, keyKinds)
	if err != nil {
		return keyMatcher{}, err
	}
	fp := join(path, kind)
	var m keyMatcher
	switch kind {
	case "exact":
		m.kind = keyExact
	case "starts_with":
		m.kind = keyStartsWith
	case "ends_with":
		m.kind = keyEndsWith
	case "contains":
		m.kind = keyContains
	case "regex":
		m.kind = keyRegex
	default:
		return m, p.errf(fp, "unknown key pattern kind; known: %s", keyKinds)
	}
	s, err := p.str(arg, fp)
	if err != nil {
		return m, err
	}
	m.s = []byte(s)
	if m.kind == keyRegex {
		if m.re, err = regexp.Compile(s); err != nil {
			return m, &ConfigError{Transform: p.transform, Field: fp, Reason: "invalid regex " + strconv.Quote(s), Err: err}
		}
	}
	return m, nil
}

func (p parser) valuePattern(v any, path string) (valueMatcher, error) {
	kind, arg, err := p.single(v, path, valueKinds)
	if err != nil {
		return valueMatcher{}, err
	}
	fp := join(path, kind)
	var m valueMatcher
	_, bare := v.(string)
	if _, isCheck := typeChecks[kind]; bare && !isCheck {
		switch kind {
		case "equals", "contains", "regex", "greater_than", "less_than", "between":
			return m, p.errf(fp, "needs an operand, e.g. value_pattern = {%s = ...}", kind)
		}
		return m, p.errf(fp, "unknown value pattern kind; known: %s", valueKinds)
	}
	if k, ok := typeChecks[kind]; ok {
		// Upstream unit variants: only "set" makes sense, so false is an error
		// rather than a silent inversion.
		if b, ok := arg.(bool); !ok || !b {
			return m, p.errf(fp, "must be true (or write value_pattern = %q)", kind)
		}
		m.kind = k
		return m, nil
	}
	switch kind {
	case "equals":
		m.kind = valEquals
		if m.want, err = normalizeTOML(arg); err != nil {
			return m, p.errf(fp, "%v", err)
		}
	case "contains":
		m.kind = valContains
		s, err := p.str(arg, fp)
		if err != nil {
			return m, err
		}
		m.s = []byte(s)
	case "regex":
		m.kind = valRegex
		s, err := p.str(arg, fp)
		if err != nil {
			return m, err
		}
		if m.re, err = regexp.Compile(s); err != nil {
			return m, &ConfigError{Transform: p.transform, Field: fp, Reason: "invalid regex " + strconv.Quote(s), Err: err}
		}
	case "greater_than", "less_than":
		m.kind = valGreaterThan
		if kind == "less_than" {
			m.kind = valLessThan
		}
		if m.a, err = p.number(arg, fp); err != nil {
			return m, err
		}
	case "between":
		m.kind = valBetween
		l, err := p.list(arg, fp)
		if err != nil {
			return m, err
		}
		if len(l) != 2 {
			return m, p.errf(fp, "must be [low, high], got %d elements", len(l))
		}
		if m.a, err = p.number(l[0], index(fp, 0)); err != nil {
			return m, err
		}
		if m.b, err = p.number(l[1], index(fp, 1)); err != nil {
			return m, err
		}
		if m.a > m.b {
			return m, p.errf(fp, "low %v is greater than high %v, so nothing could match", m.a, m.b)
		}
	default:
		return m, p.errf(fp, "unknown value pattern kind; known: %s", valueKinds)
	}
	return m, nil
}

func (p parser) number(v any, path string) (float64, error) {
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case int:
		return float64(x), nil
	case float64:
		if math.IsNaN(x) {
			return 0, p.errf(path, "must be a number, got nan")
		}
		return x, nil
	}
	return 0, p.errf(path, "must be a number, got %s", typeName(v))
}

// normalizeTOML turns an equals operand into the shape decodeJSON produces,
// so that both sides compare with one function.
func normalizeTOML(v any) (any, error) {
	// Rendering first reuses the static-value rules (datetimes as strings,
	// NaN rejected) and guarantees the two sides agree on types.
	b, err := appendStatic(nil, v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b)
}

// decodeJSON decodes one JSON value with numbers as jsonNumber.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return normalizeNumbers(v), nil
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return parseNumber([]byte(x))
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

func parseNumber(b []byte) jsonNumber {
	s := string(b)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jsonNumber{isInt: true, i: i, f: float64(i)}
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return jsonNumber{f: f}
}

func (n jsonNumber) equal(o jsonNumber) bool {
	if n.isInt && o.isInt {
		return n.i == o.i
	}
	return n.f == o.f
}

func equalValues(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case jsonNumber:
		y, ok := b.(jsonNumber)
		return ok && x.equal(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalValues(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// match tests the JSON text val; scratch is reused for unescaping strings.
func (m *valueMatcher) match(val []byte, scratch *[]byte) bool {
	if len(val) == 0 {
		return false
	}
	c := val[0]
	isString := c == '"'
	isNumber := c == '-' || (c >= '0' && c <= '9')
	switch m.kind {
	case valIsNull:
		return c == 'n'
	case valIsNotNull:
		return c != 'n'
	case valIsString:
		return isString
	case valIsNumber:
		return isNumber
	case valIsBoolean:
		return c == 't' || c == 'f'
	case valIsObject:
		return c == '{'
	case valIsArray:
		return c == '['
	case valContains, valRegex:
		if !isString {
			return false
		}
		s := stringText(val, scratch)
		if m.kind == valContains {
			return bytes.Contains(s, m.s)
		}
		return m.re.Match(s)
	case valGreaterThan, valLessThan, valBetween:
		if !isNumber {
			return false
		}
		f, err := strconv.ParseFloat(string(val), 64)
		if err != nil && !isRangeErr(err) {
			return false
		}
		switch m.kind {
		case valGreaterThan:
			return f > m.a
		case valLessThan:
			return f < m.a
		default:
			return f >= m.a && f <= m.b
		}
	case valEquals:
		switch w := m.want.(type) {
		case string:
			return isString && string(stringText(val, scratch)) == w
		case bool:
			return (w && string(val) == "true") || (!w && string(val) == "false")
		case jsonNumber:
			return isNumber && parseNumber(val).equal(w)
		default:
			if c != '{' && c != '[' {
				return false
			}
			got, err := decodeJSON(val)
			return err == nil && equalValues(got, m.want)
		}
	}
	return false
}

// isRangeErr accepts overflow: ParseFloat still returns ±Inf or 0, which
// compares correctly against any finite bound.
func isRangeErr(err error) bool { return errors.Is(err, strconv.ErrRange) }

// stringText returns the text of a JSON string literal, unescaping into
// scratch only when the literal has escapes.
func stringText(lit []byte, scratch *[]byte) []byte {
	if !jsonscan.NeedsUnquote(lit) {
		return lit[1 : len(lit)-1]
	}
	*scratch = jsonscan.AppendUnquote((*scratch)[:0], lit)
	return *scratch
}

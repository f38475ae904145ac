package transform

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Spec is one [transforms.<Type>] table as BurntSushi/toml decodes it into
// map[string]any (tables as map[string]any, arrays as []any or
// []map[string]any, integers as int64, floats as float64).
type Spec struct {
	Type  string
	Table map[string]any
}

// ErrInvalidConfig is wrapped by every *ConfigError, for callers that only
// need to know that the transform configuration was rejected.
var ErrInvalidConfig = errors.New("invalid transform config")

// ConfigError rejects one transform's configuration at start.
type ConfigError struct {
	Transform string // the table name, e.g. "filter_fields"
	Field     string // the offending field path, e.g. "patterns[0].key_pattern.regex"; empty for the table itself
	Reason    string
	Err       error // an underlying cause such as a regexp syntax error, or nil
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transforms.%s", e.Transform)
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes ErrInvalidConfig and the underlying cause to errors.Is/As.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidConfig}
	}
	return []error{ErrInvalidConfig, e.Err}
}

const (
	typeAddFields      = "add_fields"
	typeDeleteFields   = "delete_fields"
	typeFilterFields   = "filter_fields"
	typeUpdateFields   = "update_fields"
	typeUnwrapEnvelope = "unwrap_envelope"
)

var knownTypes = []string{typeAddFields, typeDeleteFields, typeFilterFields, typeUpdateFields, typeUnwrapEnvelope}

// unsupportedTypes are upstream transforms for non-JSON payload conversion
// that this sink does not implement.
var unsupportedTypes = []string{"proto_convert", "flatbuffer_convert", "avro_convert"}

// SpecsFromTOML returns the [transforms.*] tables of a connector TOML file in
// the order they appear in the file; other tables are ignored.
func SpecsFromTOML(data []byte) ([]Spec, error) {
	var doc map[string]any
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		// The parser's message can quote the offending text, which may sit in
		// a secret-bearing part of the file; report only where it is.
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("transform: decode TOML: syntax error at line %d (after key %q): %w", pe.Position.Line, pe.LastKey, ErrInvalidConfig)
		}
		return nil, fmt.Errorf("transform: decode TOML: %w", ErrInvalidConfig)
	}
	raw, ok := doc["transforms"]
	if !ok {
		return nil, nil
	}
	all, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("transform: %w: \"transforms\" must be a table of [transforms.<type>] tables, got %s", ErrInvalidConfig, typeName(raw))
	}
	var specs []Spec
	seen := map[string]bool{}
	for _, k := range md.Keys() {
		if len(k) < 2 || k[0] != "transforms" || seen[k[1]] {
			continue
		}
		seen[k[1]] = true
		t, ok := all[k[1]].(map[string]any)
		if !ok {
			return nil, &ConfigError{Transform: k[1], Reason: "must be a table, got " + typeName(all[k[1]])}
		}
		specs = append(specs, Spec{Type: k[1], Table: t})
	}
	return specs, nil
}

// parseSpec validates one table. It returns a nil step for a disabled transform.
func parseSpec(s Spec) (step, error) {
	p := parser{transform: s.Type}
	if s.Type == "" {
		return nil, p.errf("", "transform type is empty; known types: %s", strings.Join(knownTypes, ", "))
	}
	known := slices.Contains(knownTypes, s.Type)
	unsupported := slices.Contains(unsupportedTypes, s.Type)
	if !known && !unsupported {
		return nil, p.errf("", "unknown transform type; known types: %s", strings.Join(knownTypes, ", "))
	}
	t := s.Table
	v, ok := t["enabled"]
	if !ok {
		return nil, p.errf("enabled", "is required (true or false)")
	}
	enabled, ok := v.(bool)
	if !ok {
		return nil, p.errf("enabled", "must be a boolean, got %s", typeName(v))
	}
	if unsupported {
		if !enabled {
			return nil, nil
		}
		return nil, p.errf("", "not supported by this sink (only JSON transforms are: %s)", strings.Join(knownTypes, ", "))
	}
	var (
		st  step
		err error
	)
	// A disabled table is still validated, so a typo surfaces before someone
	// enables it in production.
	switch s.Type {
	case typeAddFields:
		st, err = p.setFields(t, false)
	case typeUpdateFields:
		st, err = p.setFields(t, true)
	case typeDeleteFields:
		st, err = p.deleteFields(t)
	case typeFilterFields:
		st, err = p.filterFields(t)
	case typeUnwrapEnvelope:
		st, err = p.unwrapEnvelope(t)
	}
	if err != nil || !enabled {
		return nil, err
	}
	return st, nil
}

// parser builds one transform's step and names it in every error.
type parser struct{ transform string }

func (p parser) errf(field, format string, args ...any) *ConfigError {
	return &ConfigError{Transform: p.transform, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// onlyKeys rejects keys of t outside allowed; unknown keys are reported in
// sorted order so the message is stable.
func (p parser) onlyKeys(t map[string]any, path string, allowed ...string) error {
	var unknown []string
	for k := range t {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return p.errf(join(path, unknown[0]), "unknown field; allowed: %s", strings.Join(allowed, ", "))
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func (p parser) str(v any, path string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", p.errf(path, "must be a string, got %s", typeName(v))
	}
	return s, nil
}

// list accepts TOML arrays in both decoded shapes.
func (p parser) list(v any, path string) ([]any, error) {
	switch l := v.(type) {
	case []any:
		return l, nil
	case []map[string]any:
		out := make([]any, len(l))
		for i, t := range l {
			out[i] = t
		}
		return out, nil
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, nil
	}
	return nil, p.errf(path, "must be an array, got %s", typeName(v))
}

func (p parser) table(v any, path string) (map[string]any, error) {
	t, ok := v.(map[string]any)
	if !ok {
		return nil, p.errf(path, "must be a table, got %s", typeName(v))
	}
	return t, nil
}

func (p parser) strList(t map[string]any, key string) ([]string, error) {
	v, ok := t[key]
	if !ok {
		return nil, nil
	}
	l, err := p.list(v, key)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(l))
	for i, e := range l {
		if out[i], err = p.str(e, index(key, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (p parser) setFields(t map[string]any, withCondition bool) (step, error) {
	allowedField := []string{"key", "value"}
	if withCondition {
		allowedField = append(allowedField, "condition")
	}
	if err := p.onlyKeys(t, "", "enabled", "fields"); err != nil {
		return nil, err
	}
	s := &setFields{}
	raw, ok := t["fields"]
	if !ok {
		return s, nil
	}
	l, err := p.list(raw, "fields")
	if err != nil {
		return nil, err
	}
	for i, e := range l {
		path := index("fields", i)
		ft, err := p.table(e, path)
		if err != nil {
			return nil, err
		}
		if err := p.onlyKeys(ft, path, allowedField...); err != nil {
			return nil, err
		}
		kv, ok := ft["key"]
		if !ok {
			return nil, p.errf(join(path, "key"), "is required")
		}
		key, err := p.str(kv, join(path, "key"))
		if err != nil {
			return nil, err
		}
		vv, ok := ft["value"]
		if !ok {
			return nil, p.errf(join(path, "value"), "is required (value.static or value.computed)")
		}
		f := setField{key: newKeyName(key), cond: condAlways}
		if f.val, err = p.fieldValue(vv, join(path, "value")); err != nil {
			return nil, err
		}
		if cv, ok := ft["condition"]; ok {
			c, err := p.str(cv, join(path, "condition"))
			if err != nil {
				return nil, err
			}
			switch c {
			case "always":
				f.cond = condAlways
			case "key_exists":
				f.cond = condKeyExists
			case "key_not_exists":
				f.cond = condKeyNotExists
			default:
				return nil, p.errf(join(path, "condition"), "unknown condition %q; known: always, key_exists, key_not_exists", c)
			}
		}
		s.fields = append(s.fields, f)
	}
	return s, nil
}

func (p parser) fieldValue(v any, path string) (fieldValue, error) {
	t, err := p.table(v, path)
	if err != nil {
		return fieldValue{}, err
	}
	if err := p.onlyKeys(t, path, "static", "computed"); err != nil {
		return fieldValue{}, err
	}
	sv, hasStatic := t["static"]
	cv, hasComputed := t["computed"]
	switch {
	case hasStatic && hasComputed:
		return fieldValue{}, p.errf(path, "set either static or computed, not both")
	case hasStatic:
		b, err := appendStatic(nil, sv)
		if err != nil {
			return fieldValue{}, p.errf(join(path, "static"), "%v", err)
		}
		return fieldValue{static: b}, nil
	case hasComputed:
		name, err := p.str(cv, join(path, "computed"))
		if err != nil {
			return fieldValue{}, err
		}
		c, ok := parseComputed(name)
		if !ok {
			names := make([]string, len(computedNames))
			for i, n := range computedNames {
				names[i] = n.name
			}
			return fieldValue{}, p.errf(join(path, "computed"), "unknown computed value %q; known: %s", name, strings.Join(names, ", "))
		}
		return fieldValue{comp: c}, nil
	}
	return fieldValue{}, p.errf(path, "needs static or computed")
}

func (p parser) deleteFields(t map[string]any) (step, error) {
	if err := p.onlyKeys(t, "", "enabled", "fields"); err != nil {
		return nil, err
	}
	names, err := p.strList(t, "fields")
	if err != nil {
		return nil, err
	}
	d := &deleteFields{}
	for _, n := range names {
		d.keys = append(d.keys, newKeyName(n))
	}
	return d, nil
}

func (p parser) unwrapEnvelope(t map[string]any) (step, error) {
	if err := p.onlyKeys(t, "", "enabled", "field"); err != nil {
		return nil, err
	}
	v, ok := t["field"]
	if !ok {
		return nil, p.errf("field", "is required")
	}
	f, err := p.str(v, "field")
	if err != nil {
		return nil, err
	}
	if f == "" {
		return nil, p.errf("field", "must not be empty")
	}
	return &unwrapEnvelope{key: newKeyName(f)}, nil
}

func (p parser) filterFields(t map[string]any) (step, error) {
	if err := p.onlyKeys(t, "", "enabled", "keep_fields", "patterns", "include_matching"); err != nil {
		return nil, err
	}
	f := &filterFields{include: true}
	keep, err := p.strList(t, "keep_fields")
	if err != nil {
		return nil, err
	}
	for _, k := range keep {
		f.keep = append(f.keep, newKeyName(k))
	}
	if v, ok := t["include_matching"]; ok {
		b, ok := v.(bool)
		if !ok {
			return nil, p.errf("include_matching", "must be a boolean, got %s", typeName(v))
		}
		f.include = b
	}
	if v, ok := t["patterns"]; ok {
		l, err := p.list(v, "patterns")
		if err != nil {
			return nil, err
		}
		for i, e := range l {
			path := index("patterns", i)
			pt, err := p.table(e, path)
			if err != nil {
				return nil, err
			}
			if err := p.onlyKeys(pt, path, "key_pattern", "value_pattern"); err != nil {
				return nil, err
			}
			var pat pattern
			if kv, ok := pt["key_pattern"]; ok {
				km, err := p.keyPattern(kv, join(path, "key_pattern"))
				if err != nil {
					return nil, err
				}
				pat.key = &km
			}
			if vv, ok := pt["value_pattern"]; ok {
				vm, err := p.valuePattern(vv, join(path, "value_pattern"))
				if err != nil {
					return nil, err
				}
				pat.value = &vm
			}
			f.patterns = append(f.patterns, pat)
		}
	}
	return f, nil
}

// single returns the one key/value of a pattern table such as {exact = "x"}.
func (p parser) single(v any, path, kinds string) (string, any, error) {
	// Unit variants may also be written upstream's serde way, as a bare string.
	if s, ok := v.(string); ok {
		return s, true, nil
	}
	t, err := p.table(v, path)
	if err != nil {
		return "", nil, err
	}
	if len(t) != 1 {
		return "", nil, p.errf(path, "must hold exactly one of: %s (has %d)", kinds, len(t))
	}
	for k, v := range t {
		return k, v, nil
	}
	panic("unreachable")
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, int, int32, uint64:
		return "an integer"
	case float64:
		return "a float"
	case map[string]any:
		return "a table"
	case []any, []map[string]any, []string:
		return "an array"
	case time.Time:
		return "a datetime"
	}
	return fmt.Sprintf("%T", v)
}

// appendStatic renders a decoded TOML value as compact JSON: tables become
// objects with sorted keys, integers keep no decimal point, floats are
// written the way serde_json writes f64.
func appendStatic(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendQuote(dst, x), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%v cannot be written as JSON", x)
		}
		return appendFloat(dst, x), nil
	case time.Time:
		return appendQuote(dst, tomlTime(x)), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendQuote(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendStatic(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []map[string]any:
		l := make([]any, len(x))
		for i, t := range x {
			l[i] = t
		}
		return appendStatic(dst, l)
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return appendStatic(dst, l)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendStatic(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// tomlTime writes a TOML datetime back in TOML's own text form; BurntSushi
// marks local (zone-less) values with these location names.
func tomlTime(t time.Time) string {
	switch t.Location().String() {
	case "datetime-local":
		return t.Format("2006-01-02T15:04:05.999999999")
	case "date-local":
		return t.Format("2006-01-02")
	case "time-local":
		return t.Format("15:04:05.999999999")
	}
	return t.Format(time.RFC3339Nano)
}

// appendFloat follows ryu's layout as used by serde_json: integral values keep
// ".0", plain decimals for decimal exponents in (-5, 16], scientific beyond.
func appendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d.ddde±xx
	mant, expPart, _ := strings.Cut(string(e), "e")
	exp, _ := strconv.Atoi(expPart)
	digits := strings.Replace(mant, ".", "", 1)
	n := len(digits)
	kk := exp + 1 // position of the decimal point relative to the digits
	switch {
	case n <= kk && kk <= 16:
		dst = append(dst, digits...)
		dst = append(dst, strings.Repeat("0", kk-n)...)
		return append(dst, ".0"...)
	case 0 < kk && kk <= 16:
		dst = append(dst, digits[:kk]...)
		dst = append(dst, '.')
		return append(dst, digits[kk:]...)
	case -5 < kk && kk <= 0:
		dst = append(dst, "0."...)
		dst = append(dst, strings.Repeat("0", -kk)...)
		return append(dst, digits...)
	}
	dst = append(dst, digits[0])
	if n > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(kk-1), 10)
}

package deploytest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// noValue stands for AWS::NoValue: the property or list item disappears.
type noValue struct{}

// stack evaluates a CloudFormation template (JSON-shaped maps, as the SAM
// transform prints them or as parseTemplateYAML builds them) for one set of
// parameter values, the way CloudFormation resolves intrinsics at deploy time.
// References to resources become "Ref(Id)" and "GetAtt(Id.Attr)", which is
// enough to check wiring without deploying.
type stack struct {
	t          *testing.T
	tpl        map[string]any
	params     map[string]any // string, or []any of strings for list types
	conditions map[string]bool
}

const (
	testStackName = "iggy-sink-test"
	testRegion    = "us-east-1"
	testAccount   = "123456789012"
)

func newStack(t *testing.T, tpl map[string]any, overrides map[string]string) *stack {
	t.Helper()
	s := &stack{t: t, tpl: tpl, params: map[string]any{}, conditions: map[string]bool{}}
	decls := mapAt(t, tpl, "Parameters")
	for name := range overrides {
		if _, ok := decls[name]; !ok {
			t.Fatalf("parameter override %s: the template has no such parameter", name)
		}
	}
	for name, d := range decls {
		decl := d.(map[string]any)
		v, ok := overrides[name]
		if !ok {
			def, has := decl["Default"]
			if !has {
				t.Fatalf("parameter %s has no default and the test gives no value", name)
			}
			v = scalarString(def)
		}
		if err := checkParameter(decl, v); err != nil {
			t.Fatalf("parameter %s=%q: %v", name, v, err)
		}
		if typ, _ := decl["Type"].(string); typ == "CommaDelimitedList" || strings.HasPrefix(typ, "List<") {
			var items []any
			for _, it := range strings.Split(v, ",") {
				items = append(items, strings.TrimSpace(it))
			}
			s.params[name] = items
		} else {
			s.params[name] = v
		}
	}
	return s
}

// checkParameter applies the constraints CloudFormation checks before a deploy.
func checkParameter(decl map[string]any, v string) error {
	typ, _ := decl["Type"].(string)
	if allowed, ok := decl["AllowedValues"].([]any); ok {
		found := false
		for _, a := range allowed {
			found = found || scalarString(a) == v
		}
		if !found {
			return fmt.Errorf("not one of %v", allowed)
		}
	}
	if p, ok := decl["AllowedPattern"].(string); ok {
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err != nil {
			return fmt.Errorf("AllowedPattern %q: %w", p, err)
		}
		if !re.MatchString(v) {
			return fmt.Errorf("does not match AllowedPattern %q", p)
		}
	}
	if n, ok := decl["MinLength"]; ok && len(v) < atoi(n) {
		return fmt.Errorf("shorter than MinLength %v", n)
	}
	if n, ok := decl["MaxLength"]; ok && len(v) > atoi(n) {
		return fmt.Errorf("longer than MaxLength %v", n)
	}
	if typ == "Number" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("not a number")
		}
		if n, ok := decl["MinValue"]; ok && f < float64(atoi(n)) {
			return fmt.Errorf("below MinValue %v", n)
		}
		if n, ok := decl["MaxValue"]; ok && f > float64(atoi(n)) {
			return fmt.Errorf("above MaxValue %v", n)
		}
	}
	return nil
}

func atoi(v any) int {
	n, err := strconv.Atoi(scalarString(v))
	if err != nil {
		panic(fmt.Sprintf("not an integer: %v", v))
	}
	return n
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

func (s *stack) condition(name string) bool {
	s.t.Helper()
	if v, ok := s.conditions[name]; ok {
		return v
	}
	c, ok := mapAt(s.t, s.tpl, "Conditions")[name]
	if !ok {
		s.t.Fatalf("unknown condition %s", name)
	}
	v, ok := s.eval(c).(bool)
	if !ok {
		s.t.Fatalf("condition %s does not evaluate to a boolean", name)
	}
	s.conditions[name] = v
	return v
}

// resources returns the resources that exist for these parameters.
func (s *stack) resources() map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range mapAt(s.t, s.tpl, "Resources") {
		res := r.(map[string]any)
		if c, ok := res["Condition"].(string); ok && !s.condition(c) {
			continue
		}
		out[id] = res
	}
	return out
}

// resource returns one evaluated resource of the wanted type, failing if absent.
func (s *stack) resource(id, typ string) map[string]any {
	s.t.Helper()
	r, ok := s.resources()[id]
	if !ok {
		s.t.Fatalf("resource %s does not exist", id)
	}
	if r["Type"] != typ {
		s.t.Fatalf("resource %s has type %v, want %s", id, r["Type"], typ)
	}
	props, _ := s.eval(r["Properties"]).(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	return props
}

func (s *stack) eval(v any) any {
	s.t.Helper()
	switch x := v.(type) {
	case []any:
		out := []any{}
		for _, it := range x {
			if e := s.eval(it); e != (noValue{}) {
				out = append(out, e)
			}
		}
		return out
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
					return s.intrinsic(k, arg)
				}
			}
		}
		out := map[string]any{}
		for k, it := range x {
			if e := s.eval(it); e != (noValue{}) {
				out[k] = e
			}
		}
		return out
	default:
		return v
	}
}

func (s *stack) ref(name string) any {
	switch name {
	case "AWS::NoValue":
		return noValue{}
	case "AWS::Region":
		return testRegion
	case "AWS::AccountId":
		return testAccount
	case "AWS::Partition":
		return "aws"
	case "AWS::StackName":
		return testStackName
	case "AWS::URLSuffix":
		return "amazonaws.com"
	}
	if v, ok := s.params[name]; ok {
		return v
	}
	if _, ok := mapAt(s.t, s.tpl, "Resources")[name]; ok {
		return "Ref(" + name + ")"
	}
	s.t.Fatalf("Ref to unknown name %s", name)
	return nil
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (s *stack) intrinsic(fn string, arg any) any {
	s.t.Helper()
	args, _ := arg.([]any)
	str := func(v any) string {
		e := s.eval(v)
		r, ok := e.(string)
		if !ok {
			s.t.Fatalf("%s: %v is not a string", fn, e)
		}
		return r
	}
	list := func(v any) []any {
		e, ok := s.eval(v).([]any)
		if !ok {
			s.t.Fatalf("%s: %v is not a list", fn, v)
		}
		return e
	}
	switch fn {
	case "Ref":
		return s.ref(arg.(string))
	case "Condition":
		return s.condition(arg.(string))
	case "Fn::GetAtt":
		if p, ok := arg.(string); ok {
			return "GetAtt(" + p + ")"
		}
		return fmt.Sprintf("GetAtt(%s.%s)", args[0], args[1])
	case "Fn::If":
		if s.condition(args[0].(string)) {
			return s.eval(args[1])
		}
		return s.eval(args[2])
	case "Fn::Equals":
		return fmt.Sprint(s.eval(args[0])) == fmt.Sprint(s.eval(args[1]))
	case "Fn::Not":
		return !s.eval(args[0]).(bool)
	case "Fn::And", "Fn::Or":
		and := fn == "Fn::And"
		for _, a := range args {
			if s.eval(a).(bool) != and {
				return !and
			}
		}
		return and
	case "Fn::Join":
		var parts []string
		for _, p := range list(args[1]) {
			parts = append(parts, p.(string))
		}
		return strings.Join(parts, str(args[0]))
	case "Fn::Split":
		var out []any
		for _, p := range strings.Split(str(args[1]), str(args[0])) {
			out = append(out, p)
		}
		return out
	case "Fn::Select":
		return list(args[1])[atoi(s.eval(args[0]))]
	case "Fn::Sub":
		tmpl, vars := "", map[string]any{}
		if p, ok := arg.(string); ok {
			tmpl = p
		} else {
			tmpl = args[0].(string)
			vars = args[1].(map[string]any)
		}
		return subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
			name := m[2 : len(m)-1]
			if strings.HasPrefix(name, "!") {
				return "${" + name[1:] + "}"
			}
			if v, ok := vars[name]; ok {
				return str(v)
			}
			if strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::") {
				return "GetAtt(" + name + ")"
			}
			v, ok := s.ref(name).(string)
			if !ok {
				s.t.Fatalf("Fn::Sub %q: ${%s} is not a string", tmpl, name)
			}
			return v
		})
	}
	s.t.Fatalf("intrinsic %s is not supported by the test evaluator", fn)
	return nil
}

func mapAt(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("%s is not a mapping", key)
	}
	return v
}

// parseTemplateYAML reads a CloudFormation YAML template, turning the short
// intrinsic forms (!Ref, !Sub, !GetAtt ...) into their JSON forms.
func parseTemplateYAML(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	v, err := yamlValue(doc.Content[0])
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	return v.(map[string]any)
}

func yamlValue(n *yaml.Node) (any, error) {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := n.Tag[1:]
		plain := *n
		plain.Tag = ""
		if n.Kind == yaml.ScalarNode {
			plain.Tag = "!!str"
		}
		inner, err := yamlValue(&plain)
		if err != nil {
			return nil, err
		}
		switch name {
		case "Ref", "Condition":
			return map[string]any{name: inner}, nil
		case "GetAtt":
			if s, ok := inner.(string); ok {
				res, attr, _ := strings.Cut(s, ".")
				inner = []any{res, attr}
			}
		}
		return map[string]any{"Fn::" + name: inner}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := yamlValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			v, err := yamlValue(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.AliasNode:
		return yamlValue(n.Alias)
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		if i, ok := v.(int); ok {
			return float64(i), nil // as encoding/json would give
		}
		return v, nil
	}
}

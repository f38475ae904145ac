// Package picture draws the stack's CloudWatch dashboard as an SVG, from
// template.yaml: it evaluates SinkDashboard's DashboardBody for a set of
// parameter values (the intrinsics a dashboard body uses: Ref, Fn::Sub,
// Fn::Join, Fn::If and the conditions behind them) and draws each widget's
// box where CloudWatch puts it, with its title and its series' labels.
// The output is a pure function of the template, so a test can redraw it
// and compare it with the committed docs/dashboard.svg.
package picture

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DashboardID is the logical id of the dashboard resource in template.yaml.
const DashboardID = "SinkDashboard"

// Options choose the stack the body is evaluated for.
type Options struct {
	// Params are parameter values; the template's defaults fill the rest.
	Params map[string]string
	// Ref, when set, gives the value of a resource's Ref ("SinkFunction"),
	// a GetAtt ("ErrorsAlarm.Arn") or a pseudo parameter ("AWS::Region");
	// false leaves it to the placeholder (<SinkFunction>, <region>, ...).
	Ref func(name string) (string, bool)
}

// Body evaluates the template's dashboard body as CloudFormation would
// deploy it for opts, or says why it cannot.
func Body(template []byte, opts Options) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(template, &doc); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	if len(doc.Content) == 0 {
		return "", errors.New("template: empty document")
	}
	tpl, err := plain(doc.Content[0])
	if err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	root, ok := tpl.(map[string]any)
	if !ok {
		return "", errors.New("template: the document is not a mapping")
	}
	e := &evaluator{tpl: root, opts: opts, conditions: map[string]bool{}}
	if err := e.checkParams(); err != nil {
		return "", err
	}
	resources, _ := root["Resources"].(map[string]any)
	res, _ := resources[DashboardID].(map[string]any)
	props, _ := res["Properties"].(map[string]any)
	raw, ok := props["DashboardBody"]
	if !ok {
		return "", fmt.Errorf("template: no Resources.%s.Properties.DashboardBody", DashboardID)
	}
	v, err := e.eval(raw)
	if err != nil {
		return "", fmt.Errorf("%s DashboardBody: %w", DashboardID, err)
	}
	body, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s DashboardBody evaluates to %T, want a string", DashboardID, v)
	}
	return body, nil
}

// plain turns a YAML node into maps, lists and scalars, the short intrinsic
// forms (!Sub, !If, ...) into their long forms ({"Fn::Sub": ...}).
func plain(n *yaml.Node) (any, error) {
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := n.Tag[1:]
		untagged := *n
		untagged.Tag = ""
		if n.Kind == yaml.ScalarNode {
			untagged.Tag = "!!str"
		}
		inner, err := plain(&untagged)
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
			v, err := plain(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			v, err := plain(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.AliasNode:
		return plain(n.Alias)
	default:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
}

type evaluator struct {
	tpl        map[string]any
	opts       Options
	conditions map[string]bool
}

// noValue is AWS::NoValue: the list item disappears.
type noValue struct{}

func (e *evaluator) checkParams() error {
	decls, _ := e.tpl["Parameters"].(map[string]any)
	var unknown []string
	for name := range e.opts.Params {
		if _, ok := decls[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("parameter %s: the template has no such parameter (see its Parameters section)", strings.Join(unknown, ", "))
	}
	return nil
}

var pseudo = map[string]string{
	"AWS::Region":    "<region>",
	"AWS::StackName": "<stack>",
	"AWS::AccountId": "<account>",
	"AWS::Partition": "aws",
	"AWS::URLSuffix": "amazonaws.com",
	"AWS::StackId":   "<stack-id>",
}

func (e *evaluator) ref(name string) (any, error) {
	if name == "AWS::NoValue" {
		return noValue{}, nil
	}
	if e.opts.Ref != nil {
		if v, ok := e.opts.Ref(name); ok {
			return v, nil
		}
	}
	if v, ok := pseudo[name]; ok {
		return v, nil
	}
	decls, _ := e.tpl["Parameters"].(map[string]any)
	if d, ok := decls[name].(map[string]any); ok {
		if v, ok := e.opts.Params[name]; ok {
			return v, nil
		}
		def, ok := d["Default"]
		if !ok {
			return nil, fmt.Errorf("parameter %s has no default: give it a value (-param %s=...)", name, name)
		}
		return scalar(def), nil
	}
	resources, _ := e.tpl["Resources"].(map[string]any)
	if _, ok := resources[name]; ok {
		return "<" + name + ">", nil
	}
	return nil, fmt.Errorf("Ref to %s, which is neither a parameter nor a resource", name)
}

func (e *evaluator) getAtt(resource, attr string) (string, error) {
	name := resource + "." + attr
	if e.opts.Ref != nil {
		if v, ok := e.opts.Ref(name); ok {
			return v, nil
		}
	}
	resources, _ := e.tpl["Resources"].(map[string]any)
	if _, ok := resources[resource]; !ok {
		return "", fmt.Errorf("GetAtt %s: no resource %s", name, resource)
	}
	return "<" + name + ">", nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

func (e *evaluator) condition(name string) (bool, error) {
	if v, ok := e.conditions[name]; ok {
		return v, nil
	}
	conds, _ := e.tpl["Conditions"].(map[string]any)
	c, ok := conds[name]
	if !ok {
		return false, fmt.Errorf("unknown condition %s", name)
	}
	v, err := e.eval(c)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s evaluates to %v, not a boolean", name, v)
	}
	e.conditions[name] = b
	return b, nil
}

func (e *evaluator) eval(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		out := []any{}
		for _, it := range x {
			ev, err := e.eval(it)
			if err != nil {
				return nil, err
			}
			if ev != (noValue{}) {
				out = append(out, ev)
			}
		}
		return out, nil
	case map[string]any:
		if len(x) == 1 {
			for k, arg := range x {
				if k == "Ref" || k == "Condition" || strings.HasPrefix(k, "Fn::") {
					return e.intrinsic(k, arg)
				}
			}
		}
		out := map[string]any{}
		for k, it := range x {
			ev, err := e.eval(it)
			if err != nil {
				return nil, err
			}
			if ev != (noValue{}) {
				out[k] = ev
			}
		}
		return out, nil
	default:
		return v, nil
	}
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (e *evaluator) intrinsic(fn string, arg any) (any, error) {
	args, _ := arg.([]any)
	str := func(v any) (string, error) {
		ev, err := e.eval(v)
		if err != nil {
			return "", err
		}
		if s, ok := ev.(string); ok {
			return s, nil
		}
		return "", fmt.Errorf("%s: %v is not a string", fn, ev)
	}
	boolean := func(v any) (bool, error) {
		ev, err := e.eval(v)
		if err != nil {
			return false, err
		}
		if b, ok := ev.(bool); ok {
			return b, nil
		}
		return false, fmt.Errorf("%s: %v is not a boolean", fn, ev)
	}
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		return e.ref(name)
	case "Condition":
		name, _ := arg.(string)
		return e.condition(name)
	case "Fn::GetAtt":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt %v: want [resource, attribute]", arg)
		}
		return e.getAtt(scalar(args[0]), scalar(args[1]))
	case "Fn::If":
		if len(args) != 3 {
			return nil, fmt.Errorf("Fn::If %v: want [condition, then, else]", arg)
		}
		c, err := e.condition(scalar(args[0]))
		if err != nil {
			return nil, err
		}
		if c {
			return e.eval(args[1])
		}
		return e.eval(args[2])
	case "Fn::Equals":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Equals %v: want two values", arg)
		}
		a, err := e.eval(args[0])
		if err != nil {
			return nil, err
		}
		b, err := e.eval(args[1])
		if err != nil {
			return nil, err
		}
		return scalar(a) == scalar(b), nil
	case "Fn::Not":
		if len(args) != 1 {
			return nil, fmt.Errorf("Fn::Not %v: want one condition", arg)
		}
		b, err := boolean(args[0])
		return !b, err
	case "Fn::And", "Fn::Or":
		and := fn == "Fn::And"
		for _, a := range args {
			b, err := boolean(a)
			if err != nil {
				return nil, err
			}
			if b != and {
				return !and, nil
			}
		}
		return and, nil
	case "Fn::Join":
		if len(args) != 2 {
			return nil, fmt.Errorf("Fn::Join %v: want [separator, list]", arg)
		}
		sep, err := str(args[0])
		if err != nil {
			return nil, err
		}
		items, err := e.eval(args[1])
		if err != nil {
			return nil, err
		}
		list, ok := items.([]any)
		if !ok {
			return nil, fmt.Errorf("Fn::Join: %v is not a list", items)
		}
		parts := make([]string, 0, len(list))
		for _, it := range list {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("Fn::Join: item %v is not a string", it)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, sep), nil
	case "Fn::Sub":
		tmpl, vars := "", map[string]any{}
		if s, ok := arg.(string); ok {
			tmpl = s
		} else if len(args) == 2 {
			tmpl, _ = args[0].(string)
			vars, _ = args[1].(map[string]any)
		} else {
			return nil, fmt.Errorf("Fn::Sub %v: want a string or [string, variables]", arg)
		}
		var firstErr error
		out := subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
			name := m[2 : len(m)-1]
			var s string
			var err error
			switch {
			case strings.HasPrefix(name, "!"):
				return "${" + name[1:] + "}"
			case vars[name] != nil:
				s, err = str(vars[name])
			case strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::"):
				res, attr, _ := strings.Cut(name, ".")
				s, err = e.getAtt(res, attr)
			default:
				var v any
				if v, err = e.ref(name); err == nil {
					var ok bool
					if s, ok = v.(string); !ok {
						err = fmt.Errorf("Fn::Sub: ${%s} is %v, not a string", name, v)
					}
				}
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return s
		})
		return out, firstErr
	}
	return nil, fmt.Errorf("intrinsic %s: the dashboard picture evaluates only Ref, Fn::Sub, Fn::Join, Fn::If, Fn::GetAtt and conditions (extend scripts/dashboard/picture to use it)", fn)
}

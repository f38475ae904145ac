package parquetread

import (
	"encoding/json"
	"testing"
)

func TestSame(t *testing.T) {
	dec := func(s string) any {
		v, err := DecodeJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	f := func(s string) map[string]any { return map[string]any{"$f": s} }
	n := func(s string) json.Number { return json.Number(s) }
	for _, tc := range []struct {
		want string
		got  any
		same bool
	}{
		{`7`, n("7"), true},
		{`7`, n("8"), false},
		{`7`, f("7.0"), true}, // an integer in a DOUBLE column
		{`2.50`, f("2.5"), true},
		{`2.5`, n("2"), false},
		{`"x"`, "x", true},
		{`"x"`, "y", false},
		{`true`, true, true},
		{`null`, nil, true},
		{`{"a":1,"b":null}`, map[string]any{"a": n("1")}, true},
		{`{"a":1}`, map[string]any{"a": n("1"), "c": n("2")}, false},
		{`{"a":[1,2]}`, map[string]any{"a": []any{n("1"), n("2")}}, true},
		{`{"a":[1,2]}`, map[string]any{"a": []any{n("1")}}, false},
		{`{"a":{"b":"c"}}`, map[string]any{"a": "c"}, false},
	} {
		err := Same(dec(tc.want), tc.got)
		if (err == nil) != tc.same {
			t.Errorf("Same(%s, %v) = %v, want same=%v", tc.want, tc.got, err, tc.same)
		}
	}
}

func TestAthenaProblems(t *testing.T) {
	s := Side{Leaves: [][]any{
		{"a", "INT64", "None", "None"},
		{"b", "INT32", "Int(bitWidth=32, isSigned=false)", "UINT_32"},
		{"c", "INT64", "Timestamp(isAdjustedToUTC=true, timeUnit=nanoseconds)", "None"},
		{"d", "INT96", "None", "None"},
	}}
	if p := AthenaProblems(s); len(p) != 3 {
		t.Errorf("problems %q, want b, c and d", p)
	}
}

package transform

import (
	"errors"
	"math"
	"regexp/syntax"
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name      string
		config    string
		transform string
		field     string
		reason    string // a fragment of the message
	}{
		{"unknown type", "[transforms.add_field]\nenabled = true", "add_field", "",
			"unknown transform type; known types: add_fields, delete_fields, filter_fields, update_fields, unwrap_envelope"},
		{"proto_convert", "[transforms.proto_convert]\nenabled = true\nsource_format = \"proto\"", "proto_convert", "", "not supported by this sink"},
		{"flatbuffer_convert", "[transforms.flatbuffer_convert]\nenabled = true", "flatbuffer_convert", "", "not supported by this sink"},
		{"avro_convert", "[transforms.avro_convert]\nenabled = true", "avro_convert", "", "not supported by this sink"},
		{"missing enabled", "[transforms.delete_fields]\nfields = [\"a\"]", "delete_fields", "enabled", "is required"},
		{"enabled not bool", "[transforms.delete_fields]\nenabled = \"yes\"", "delete_fields", "enabled", "must be a boolean, got a string"},
		{"unknown field in table", "[transforms.delete_fields]\nenabled = true\nfield = [\"a\"]", "delete_fields", "field", "unknown field; allowed: enabled, fields"},
		{"disabled is still validated", "[transforms.delete_fields]\nenabled = false\nfeilds = [\"a\"]", "delete_fields", "feilds", "unknown field"},
		{"fields not array", "[transforms.delete_fields]\nenabled = true\nfields = \"a\"", "delete_fields", "fields", "must be an array, got a string"},
		{"fields element not string", "[transforms.delete_fields]\nenabled = true\nfields = [\"a\", 2]", "delete_fields", "fields[1]", "must be a string, got an integer"},
		{"add without key", "[transforms.add_fields]\nenabled = true\nfields = [{value.static = 1}]", "add_fields", "fields[0].key", "is required"},
		{"add without value", "[transforms.add_fields]\nenabled = true\nfields = [{key = \"a\"}]", "add_fields", "fields[0].value", "is required"},
		{"add with condition", "[transforms.add_fields]\nenabled = true\nfields = [{key = \"a\", value.static = 1, condition = \"always\"}]", "add_fields", "fields[0].condition", "unknown field"},
		{"value both kinds", "[transforms.add_fields]\nenabled = true\nfields = [{key = \"a\", value = {static = 1, computed = \"uuid_v4\"}}]", "add_fields", "fields[0].value", "not both"},
		{"value neither kind", "[transforms.add_fields]\nenabled = true\nfields = [{key = \"a\", value = {}}]", "add_fields", "fields[0].value", "needs static or computed"},
		{"value unknown kind", "[transforms.add_fields]\nenabled = true\nfields = [{key = \"a\", value = {constant = 1}}]", "add_fields", "fields[0].value.constant", "unknown field; allowed: static, computed"},
		{"value not table", "[transforms.add_fields]\nenabled = true\nfields = [{key = \"a\", value = 1}]", "add_fields", "fields[0].value", "must be a table, got an integer"},
		{"unknown computed", "[[transforms.add_fields.fields]]\nkey = \"a\"\nvalue.computed = \"now\"\n[transforms.add_fields]\nenabled = true", "add_fields", "fields[0].value.computed",
			`unknown computed value "now"; known: date_time, timestamp_nanos, timestamp_micros, timestamp_millis, timestamp_seconds, uuid_v4, uuid_v7`},
		{"static nan", "[transforms.add_fields]\nenabled = true\nfields = [{key = \"a\", value.static = nan}]", "add_fields", "fields[0].value.static", "cannot be written as JSON"},
		{"unknown condition", "[transforms.update_fields]\nenabled = true\nfields = [{key = \"a\", value.static = 1, condition = \"if_missing\"}]", "update_fields", "fields[0].condition",
			`unknown condition "if_missing"; known: always, key_exists, key_not_exists`},
		{"condition not string", "[transforms.update_fields]\nenabled = true\nfields = [{key = \"a\", value.static = 1, condition = true}]", "update_fields", "fields[0].condition", "must be a string"},
		{"unwrap empty field", "[transforms.unwrap_envelope]\nenabled = true\nfield = \"\"", "unwrap_envelope", "field", "must not be empty"},
		{"unwrap missing field", "[transforms.unwrap_envelope]\nenabled = true", "unwrap_envelope", "field", "is required"},
		{"bad key regex", "[transforms.filter_fields]\nenabled = true\npatterns = [{key_pattern = {regex = \"(\"}}]", "filter_fields", "patterns[0].key_pattern.regex", `invalid regex "("`},
		{"bad value regex", "[transforms.filter_fields]\nenabled = true\npatterns = [{key_pattern = {exact = \"a\"}}, {value_pattern = {regex = \"[z-a]\"}}]", "filter_fields", "patterns[1].value_pattern.regex", `invalid regex "[z-a]"`},
		{"unknown key pattern kind", "[transforms.filter_fields]\nenabled = true\npatterns = [{key_pattern = {prefix = \"a\"}}]", "filter_fields", "patterns[0].key_pattern.prefix",
			"unknown key pattern kind; known: exact, starts_with, ends_with, contains, regex"},
		{"two key pattern kinds", "[transforms.filter_fields]\nenabled = true\npatterns = [{key_pattern = {exact = \"a\", contains = \"b\"}}]", "filter_fields", "patterns[0].key_pattern", "exactly one of"},
		{"key pattern bare string", "[transforms.filter_fields]\nenabled = true\npatterns = [{key_pattern = \"exact\"}]", "filter_fields", "patterns[0].key_pattern", "must be a table"},
		{"unknown value pattern kind", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = {is_integer = true}}]", "filter_fields", "patterns[0].value_pattern.is_integer", "unknown value pattern kind"},
		{"unknown bare value pattern", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = \"is_empty\"}]", "filter_fields", "patterns[0].value_pattern.is_empty", "unknown value pattern kind"},
		{"bare operand kind", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = \"equals\"}]", "filter_fields", "patterns[0].value_pattern.equals", "needs an operand"},
		{"type check false", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = {is_null = false}}]", "filter_fields", "patterns[0].value_pattern.is_null", "must be true"},
		{"greater_than not number", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = {greater_than = \"5\"}}]", "filter_fields", "patterns[0].value_pattern.greater_than", "must be a number, got a string"},
		{"between wrong length", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = {between = [1]}}]", "filter_fields", "patterns[0].value_pattern.between", "must be [low, high]"},
		{"between inverted", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = {between = [5, 1]}}]", "filter_fields", "patterns[0].value_pattern.between", "greater than high"},
		{"between element", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = {between = [1, true]}}]", "filter_fields", "patterns[0].value_pattern.between[1]", "must be a number"},
		{"contains not string", "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = {contains = 1}}]", "filter_fields", "patterns[0].value_pattern.contains", "must be a string"},
		{"unknown pattern field", "[transforms.filter_fields]\nenabled = true\npatterns = [{key = {exact = \"a\"}}]", "filter_fields", "patterns[0].key", "unknown field; allowed: key_pattern, value_pattern"},
		{"include_matching not bool", "[transforms.filter_fields]\nenabled = true\ninclude_matching = 1", "filter_fields", "include_matching", "must be a boolean"},
		{"keep_fields element", "[transforms.filter_fields]\nenabled = true\nkeep_fields = [[\"a\"]]", "filter_fields", "keep_fields[0]", "must be a string, got an array"},
		{"transform not a table", "[transforms]\ndelete_fields = 1", "delete_fields", "", "must be a table, got an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := SpecsFromTOML([]byte(tc.config))
			if err == nil {
				_, err = NewPipeline(specs)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error = %v, want a *ConfigError", err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			if ce.Transform != tc.transform || ce.Field != tc.field {
				t.Errorf("error names transform %q field %q, want %q %q", ce.Transform, ce.Field, tc.transform, tc.field)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q lacks %q", msg, tc.reason)
			}
			if !strings.HasPrefix(msg, "transforms."+tc.transform) {
				t.Errorf("message %q does not start with the transform's table name", msg)
			}
		})
	}
}

func TestConfigErrorWrapsRegexpError(t *testing.T) {
	specs, err := SpecsFromTOML([]byte("[transforms.filter_fields]\nenabled = true\npatterns = [{key_pattern = {regex = \"a**\"}}]"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewPipeline(specs)
	var se *syntax.Error
	if !errors.As(err, &se) || se.Code != syntax.ErrInvalidRepeatOp {
		t.Errorf("error %v does not expose the regexp syntax error", err)
	}
}

func TestDisabledUnsupportedTransformIsSkipped(t *testing.T) {
	specs, err := SpecsFromTOML([]byte("[transforms.proto_convert]\nenabled = false\nsource_format = \"proto\"\n[transforms.delete_fields]\nenabled = true\nfields = [\"a\"]"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPipeline(specs)
	if err != nil {
		t.Fatalf("NewPipeline: %v", err)
	}
	if p.Len() != 1 {
		t.Errorf("Len() = %d, want 1 (only delete_fields)", p.Len())
	}
}

func TestDuplicateSpecRejected(t *testing.T) {
	s := Spec{Type: "delete_fields", Table: map[string]any{"enabled": true}}
	_, err := NewPipeline([]Spec{s, s})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Transform != "delete_fields" || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("error = %v, want a duplicate delete_fields error", err)
	}
}

func TestSpecsFromTOMLOrderAndScope(t *testing.T) {
	src := `
type = "sink"
key = "s3"
[[streams]]
stream = "a"
[transforms.update_fields]
enabled = true
[[transforms.add_fields.fields]]
key = "k"
value.static = 1
[plugin_config]
bucket = "b"
[transforms.add_fields]
enabled = true
[transforms.delete_fields]
enabled = false
`
	specs, err := SpecsFromTOML([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range specs {
		got = append(got, s.Type)
	}
	if want := "update_fields,add_fields,delete_fields"; strings.Join(got, ",") != want {
		t.Errorf("order = %v, want %s", got, want)
	}
	if specs[1].Table["enabled"] != true || specs[1].Table["fields"] == nil {
		t.Errorf("add_fields table = %v, want enabled and fields", specs[1].Table)
	}
	if none, err := SpecsFromTOML([]byte("type = \"sink\"")); err != nil || len(none) != 0 {
		t.Errorf("file without transforms: %v, %v", none, err)
	}
	broken := "[iggy]\npassword = \"s3cr3t\nusername = 1\n"
	if _, err := SpecsFromTOML([]byte(broken)); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("broken TOML: error = %v, want the line and no secret", err)
	}
	if _, err := SpecsFromTOML([]byte("transforms = 1")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("transforms = 1: error = %v, want ErrInvalidConfig", err)
	}
}

func TestAppendFloat(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{-2.5, "-2.5"},
		{0.1, "0.1"},
		{123456.789, "123456.789"},
		{1e15, "1000000000000000.0"},
		{1e16, "1e16"},
		{1.5e17, "1.5e17"},
		{0.0001, "0.0001"},
		{0.00001, "0.00001"},
		{0.000001, "1e-6"},
		{1.25e-7, "1.25e-7"},
		{math.MaxFloat64, "1.7976931348623157e308"},
		{5e-324, "5e-324"},
	}
	for _, tc := range cases {
		if got := string(appendFloat(nil, tc.f)); got != tc.want {
			t.Errorf("appendFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

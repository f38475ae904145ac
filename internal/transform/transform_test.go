package transform

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// testMeta is the message the table tests transform: 2024-03-16T14:02:31.123456Z.
var testMeta = msgMeta{stream: "app_logs", topic: "api_requests", partition: 1, offset: 42, timestampMicros: 1710597751123456}

func newPipelineTOML(t testing.TB, src string) *Pipeline {
	t.Helper()
	specs, err := SpecsFromTOML([]byte(src))
	if err != nil {
		t.Fatalf("SpecsFromTOML: %v", err)
	}
	p, err := NewPipeline(specs)
	if err != nil {
		t.Fatalf("NewPipeline: %v", err)
	}
	return p
}

func run(t testing.TB, p *Pipeline, in string) string {
	t.Helper()
	out, err := p.Transform(nil, []byte(in), testMeta.stream, testMeta.topic, testMeta.partition, testMeta.offset, testMeta.timestampMicros)
	if err != nil {
		t.Fatalf("Transform(%s): %v", in, err)
	}
	if !json.Valid(out) {
		t.Fatalf("Transform(%s) = %s: not valid JSON", in, out)
	}
	return string(out)
}

type transformCase struct {
	name, config, in, want string
}

func runCases(t *testing.T, cases []transformCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipelineTOML(t, tc.config)
			if got := run(t, p, tc.in); got != tc.want {
				t.Errorf("in  %s\ngot  %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestAddFields(t *testing.T) {
	runCases(t, []transformCase{
		{"static string appended", `
[transforms.add_fields]
enabled = true
[[transforms.add_fields.fields]]
key = "message"
value.static = "hello"`, `{"a":1}`, `{"a":1,"message":"hello"}`},
		{"static types in config order", `
[transforms.add_fields]
enabled = true
fields = [
  {key = "i", value.static = 42},
  {key = "f", value.static = 1.5},
  {key = "whole", value.static = 2.0},
  {key = "b", value.static = false},
  {key = "arr", value.static = [1, "two", 3.25]},
  {key = "obj", value.static = {z = 1, a = {y = true}}},
]`, `{}`, `{"i":42,"f":1.5,"whole":2.0,"b":false,"arr":[1,"two",3.25],"obj":{"a":{"y":true},"z":1}}`},
		{"existing key overwritten in place", `
[transforms.add_fields]
enabled = true
fields = [{key = "b", value.static = "new"}]`, `{"a":1,"b":{"old":[1,2]},"c":3}`, `{"a":1,"b":"new","c":3}`},
		{"escaped existing key overwritten", `
[transforms.add_fields]
enabled = true
fields = [{key = "b", value.static = 0}]`, `{"\u0062":1,"c":3}`, `{"\u0062":0,"c":3}`},
		{"duplicate keys collapse to the first position", `
[transforms.add_fields]
enabled = true
fields = [{key = "a", value.static = 9}]`, `{"a":1,"b":2,"a":3}`, `{"a":9,"b":2}`},
		{"string needing escapes", `
[transforms.add_fields]
enabled = true
fields = [{key = "q\"k", value.static = "line\nnext\u0001<&>é"}]`, `{}`, `{"q\"k":"line\nnext\u0001<&>é"}`},
		{"computed from message metadata", `
[transforms.add_fields]
enabled = true
fields = [
  {key = "dt", value.computed = "date_time"},
  {key = "ns", value.computed = "timestamp_nanos"},
  {key = "us", value.computed = "timestamp_micros"},
  {key = "ms", value.computed = "timestamp_millis"},
  {key = "s", value.computed = "timestamp_seconds"},
]`, `{"x":null}`, `{"x":null,"dt":"2024-03-16T14:02:31Z","ns":1710597751123456000,"us":1710597751123456,"ms":1710597751123,"s":1710597751}`},
		{"empty fields keep the object", `
[transforms.add_fields]
enabled = true`, `{"a":1}`, `{"a":1}`},
		{"disabled transform is skipped", `
[transforms.add_fields]
enabled = false
fields = [{key = "x", value.static = 1}]`, `{"a":1}`, `{"a":1}`},
	})
}

func TestDeleteFields(t *testing.T) {
	runCases(t, []transformCase{
		{"present and absent keys", `
[transforms.delete_fields]
enabled = true
fields = ["b", "missing"]`, `{"a":1,"b":{"n":[1,{"b":2}]},"c":"b"}`, `{"a":1,"c":"b"}`},
		{"every key", `
[transforms.delete_fields]
enabled = true
fields = ["a", "b"]`, `{"a":1,"b":2}`, `{}`},
		{"duplicates and escaped spelling", `
[transforms.delete_fields]
enabled = true
fields = ["a"]`, `{"a":1,"\u0061":2,"b":3,"a":4}`, `{"b":3}`},
		{"nested keys untouched", `
[transforms.delete_fields]
enabled = true
fields = ["inner"]`, `{"o":{"inner":1}}`, `{"o":{"inner":1}}`},
		{"unicode key", `
[transforms.delete_fields]
enabled = true
fields = ["clé"]`, `{"clé":1,"cl\u00e9":2,"k":3}`, `{"k":3}`},
		{"invalid UTF-8 key reads as U+FFFD, as in encoding/json", `
[transforms.delete_fields]
enabled = true
fields = ["\uFFFD"]`, "{\"\xff\":1,\"k\":2}", `{"k":2}`},
	})
}

func TestFilterFieldsKeyPatterns(t *testing.T) {
	const in = `{"id":1,"meta_created":"x","created_meta":"y","has_meta_inside":"z","other":2}`
	cfg := func(pattern string) string {
		return "[transforms.filter_fields]\nenabled = true\npatterns = [{key_pattern = " + pattern + "}]"
	}
	runCases(t, []transformCase{
		{"exact", cfg(`{exact = "id"}`), in, `{"id":1}`},
		{"starts_with", cfg(`{starts_with = "meta_"}`), in, `{"meta_created":"x"}`},
		{"ends_with", cfg(`{ends_with = "_meta"}`), in, `{"created_meta":"y"}`},
		{"contains", cfg(`{contains = "meta"}`), in, `{"meta_created":"x","created_meta":"y","has_meta_inside":"z"}`},
		{"regex unanchored", cfg(`{regex = "^(id|oth)"}`), in, `{"id":1,"other":2}`},
		{"exact on escaped key", cfg(`{exact = "id"}`), `{"\u0069d":1,"x":2}`, `{"\u0069d":1}`},
	})
}

func TestFilterFieldsValuePatterns(t *testing.T) {
	const in = `{"n":null,"s":"hello world","e":"tab\there","i":7,"f":2.5,"neg":-3,"big":1e400,"t":true,"o":{"a":[1,2]},"a":[1,"x"]}`
	cfg := func(pattern string) string {
		return "[transforms.filter_fields]\nenabled = true\npatterns = [{value_pattern = " + pattern + "}]"
	}
	runCases(t, []transformCase{
		{"equals string", cfg(`{equals = "hello world"}`), in, `{"s":"hello world"}`},
		{"equals escaped string", cfg(`{equals = "tab\there"}`), in, `{"e":"tab\there"}`},
		{"equals integer also matches 7.0", cfg(`{equals = 7}`), `{"i":7,"j":7.0,"k":70,"s":"7"}`, `{"i":7,"j":7.0}`},
		{"equals float", cfg(`{equals = 2.5}`), in, `{"f":2.5}`},
		{"equals bool", cfg(`{equals = true}`), in, `{"t":true}`},
		{"equals table ignores key order", cfg(`{equals = {a = [1, 2]}}`), `{"o":{"a":[1,2]},"p":{"a":[2,1]},"q":{"a":[1,2],"b":0}}`, `{"o":{"a":[1,2]}}`},
		{"equals array", cfg(`{equals = [1, "x"]}`), in, `{"a":[1,"x"]}`},
		{"contains", cfg(`{contains = "world"}`), in, `{"s":"hello world"}`},
		{"contains sees unescaped text", cfg(`{contains = "\t"}`), in, `{"e":"tab\there"}`},
		{"regex", cfg(`{regex = "^h.*d$"}`), in, `{"s":"hello world"}`},
		{"greater_than", cfg(`{greater_than = 2}`), in, `{"i":7,"f":2.5,"big":1e400}`},
		{"less_than", cfg(`{less_than = 0}`), in, `{"neg":-3}`},
		{"between inclusive", cfg(`{between = [2.5, 7]}`), in, `{"i":7,"f":2.5}`},
		{"is_null", cfg(`{is_null = true}`), in, `{"n":null}`},
		{"is_null bare string", cfg(`"is_null"`), in, `{"n":null}`},
		{"is_not_null", cfg(`{is_not_null = true}`), `{"n":null,"a":0}`, `{"a":0}`},
		{"is_string", cfg(`{is_string = true}`), in, `{"s":"hello world","e":"tab\there"}`},
		{"is_number", cfg(`{is_number = true}`), in, `{"i":7,"f":2.5,"neg":-3,"big":1e400}`},
		{"is_boolean", cfg(`{is_boolean = true}`), `{"t":true,"f":false,"s":"true"}`, `{"t":true,"f":false}`},
		{"is_object", cfg(`{is_object = true}`), in, `{"o":{"a":[1,2]}}`},
		{"is_array", cfg(`{is_array = true}`), in, `{"a":[1,"x"]}`},
	})
}

func TestFilterFieldsCombinations(t *testing.T) {
	runCases(t, []transformCase{
		{"keep_fields only keeps just those", `
[transforms.filter_fields]
enabled = true
keep_fields = ["id", "name"]`, `{"id":1,"name":"t","description":"x","created_at":"y"}`, `{"id":1,"name":"t"}`},
		{"key AND value in one pattern", `
[transforms.filter_fields]
enabled = true
patterns = [{key_pattern = {contains = "date"}, value_pattern = {is_string = true}}]`,
			`{"id":1,"created_date":"2023-01-01","expired_date":null,"version":"1.0"}`, `{"created_date":"2023-01-01"}`},
		{"any pattern matches", `
[transforms.filter_fields]
enabled = true
patterns = [{key_pattern = {exact = "a"}}, {value_pattern = {is_boolean = true}}]`, `{"a":1,"b":true,"c":2}`, `{"a":1,"b":true}`},
		{"exclude matching keeps keep_fields", `
[transforms.filter_fields]
enabled = true
keep_fields = ["temp_keep"]
include_matching = false
patterns = [{key_pattern = {starts_with = "temp_"}}]`, `{"id":1,"temp_value":100,"temp_keep":true,"temp_flag":true}`, `{"id":1,"temp_keep":true}`},
		{"include with keep_fields", `
[transforms.filter_fields]
enabled = true
keep_fields = ["id"]
patterns = [{key_pattern = {starts_with = "meta_"}}]`, `{"id":1,"name":"t","meta_created":"x"}`, `{"id":1,"meta_created":"x"}`},
		{"no keep and no patterns changes nothing", `
[transforms.filter_fields]
enabled = true
include_matching = true`, `{"a":1}`, `{"a":1}`},
		{"value patterns see computed values", `
[transforms.add_fields]
enabled = true
fields = [{key = "ms", value.computed = "timestamp_millis"}, {key = "at", value.computed = "date_time"}]
[transforms.filter_fields]
enabled = true
patterns = [{value_pattern = {greater_than = 1e12}}, {value_pattern = {regex = "^2024-03-16T"}}]`, `{"a":1,"s":"x"}`, `{"ms":1710597751123,"at":"2024-03-16T14:02:31Z"}`},
		{"empty pattern matches every field", `
[transforms.filter_fields]
enabled = true
include_matching = false
patterns = [{}]`, `{"a":1,"b":2}`, `{}`},
	})
}

func TestUpdateFields(t *testing.T) {
	const in = `{"id":1,"status":"pending"}`
	runCases(t, []transformCase{
		{"no condition means always", `
[transforms.update_fields]
enabled = true
fields = [{key = "status", value.static = "updated"}, {key = "new", value.static = 1}]`, in, `{"id":1,"status":"updated","new":1}`},
		{"always", `
[transforms.update_fields]
enabled = true
fields = [{key = "status", value.static = "updated", condition = "always"}, {key = "new", value.static = 1, condition = "always"}]`, in, `{"id":1,"status":"updated","new":1}`},
		{"key_exists", `
[transforms.update_fields]
enabled = true
fields = [{key = "status", value.static = "updated", condition = "key_exists"}, {key = "missing", value.static = 1, condition = "key_exists"}]`, in, `{"id":1,"status":"updated"}`},
		{"key_not_exists", `
[transforms.update_fields]
enabled = true
fields = [{key = "status", value.static = "nope", condition = "key_not_exists"}, {key = "created_at", value.static = "2023-01-01", condition = "key_not_exists"}]`, in, `{"id":1,"status":"pending","created_at":"2023-01-01"}`},
		{"later field sees earlier one", `
[transforms.update_fields]
enabled = true
fields = [{key = "x", value.static = 1, condition = "key_not_exists"}, {key = "x", value.static = 2, condition = "key_exists"}]`, in, `{"id":1,"status":"pending","x":2}`},
		{"computed", `
[transforms.update_fields]
enabled = true
fields = [{key = "updated_at", value.computed = "date_time", condition = "always"}]`, in, `{"id":1,"status":"pending","updated_at":"2024-03-16T14:02:31Z"}`},
	})
}

func TestUnwrapEnvelope(t *testing.T) {
	cfg := func(field string) string {
		return "[transforms.unwrap_envelope]\nenabled = true\nfield = \"" + field + "\""
	}
	runCases(t, []transformCase{
		{"object", cfg("data"), `{"table_name":"t","data":{"id":1,"k":[1]},"old_data":null}`, `{"id":1,"k":[1]}`},
		{"string", cfg("payload"), `{"payload":"just a string","meta":1}`, `"just a string"`},
		{"null", cfg("old"), `{"data":{},"old":null}`, `null`},
		{"array", cfg("items"), `{"items":[1,2,3],"count":3}`, `[1,2,3]`},
		{"missing field passes through", cfg("data"), `{"table_name":"users"}`, `{"table_name":"users"}`},
		{"last duplicate wins", cfg("d"), `{"d":1,"d":2}`, `2`},
		{"then add_fields on the inner object", cfg("data") + `
[transforms.add_fields]
enabled = true
fields = [{key = "added", value.static = true}]`, `{"data":{"id":1}}`, `{"id":1,"added":true}`},
		{"then add_fields skips a non-object", cfg("data") + `
[transforms.add_fields]
enabled = true
fields = [{key = "added", value.static = true}]`, `{"data":[1]}`, `[1]`},
		{"unwrap a static object added before", `
[transforms.add_fields]
enabled = true
fields = [{key = "env", value.static = {b = 2, a = 1}}]
` + cfg("env"), `{"x":0}`, `{"a":1,"b":2}`},
		{"unwrap a computed value", `
[transforms.add_fields]
enabled = true
fields = [{key = "ts", value.computed = "timestamp_seconds"}]
` + cfg("ts"), `{"x":0}`, `1710597751`},
	})
}

func TestNonObjectPayloadPassesThrough(t *testing.T) {
	p := newPipelineTOML(t, `
[transforms.add_fields]
enabled = true
fields = [{key = "a", value.static = 1}]
[transforms.unwrap_envelope]
enabled = true
field = "a"`)
	for _, in := range []string{`[1,{"a":2}]`, `"str"`, `12.5`, `null`, `true`, `[]`} {
		if got := run(t, p, in); got != in {
			t.Errorf("Transform(%s) = %s, want it unchanged", in, got)
		}
	}
}

func TestEmptyPipelineCopies(t *testing.T) {
	for _, specs := range [][]Spec{nil, {}, {{Type: "add_fields", Table: map[string]any{"enabled": false}}}} {
		p, err := NewPipeline(specs)
		if err != nil {
			t.Fatal(err)
		}
		if p.Len() != 0 {
			t.Fatalf("Len() = %d for %v, want 0", p.Len(), specs)
		}
		in := `{"a":1}`
		out, err := p.Transform([]byte("prefix|"), []byte(in), "s", "t", 0, 0, 0)
		if err != nil || string(out) != "prefix|"+in {
			t.Errorf("Transform = %q, %v; want %q appended to dst", out, err, in)
		}
	}
}

func TestTransformAppendsToDst(t *testing.T) {
	p := newPipelineTOML(t, "[transforms.delete_fields]\nenabled = true\nfields = [\"b\"]")
	out, err := p.Transform([]byte(`{"first":0}`+"\n"), []byte(`{"a":1,"b":2}`), "s", "t", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"first":0}` + "\n" + `{"a":1}`; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestComputedUUIDs(t *testing.T) {
	p := newPipelineTOML(t, `
[transforms.add_fields]
enabled = true
fields = [{key = "v4", value.computed = "uuid_v4"}, {key = "v7", value.computed = "uuid_v7"}]`)
	type ids struct{ V4, V7 string }
	get := func(stream, topic string, partition uint32, offset, ts uint64) ids {
		out, err := p.Transform(nil, []byte(`{}`), stream, topic, partition, offset, ts)
		if err != nil {
			t.Fatal(err)
		}
		var v ids
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return v
	}
	v4re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	v7re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	base := get("s", "t", 1, 42, 1710597751123456)
	if !v4re.MatchString(base.V4) {
		t.Errorf("uuid_v4 %q is not a v4 UUID", base.V4)
	}
	if !v7re.MatchString(base.V7) {
		t.Errorf("uuid_v7 %q is not a v7 UUID", base.V7)
	}
	// 1710597751123 ms = 0x018e47924153.
	if got := strings.ReplaceAll(base.V7, "-", "")[:12]; got != "018e47924153" {
		t.Errorf("uuid_v7 time prefix = %s, want 018e47924153", got)
	}
	if again := get("s", "t", 1, 42, 1710597751123456); again != base {
		t.Errorf("same message gave %v then %v", base, again)
	}
	if moved := get("s", "t", 1, 42, 1); moved.V4 != base.V4 {
		t.Errorf("uuid_v4 depends on the timestamp: %s vs %s", moved.V4, base.V4)
	}
	seen := map[string]bool{base.V4: true}
	for _, other := range []ids{
		get("s", "t", 1, 43, 1710597751123456),
		get("s", "t", 2, 42, 1710597751123456),
		get("s", "u", 1, 42, 1710597751123456),
		get("t", "s", 1, 42, 1710597751123456),
		get("st", "", 1, 42, 1710597751123456),
	} {
		if seen[other.V4] {
			t.Errorf("uuid_v4 %s repeats for a different message", other.V4)
		}
		seen[other.V4] = true
		if other.V7[:13] != base.V7[:13] || other.V7 == base.V7 {
			t.Errorf("uuid_v7 %s vs %s: want same time prefix, different rest", other.V7, base.V7)
		}
	}
}

func TestComputedTimestampEdges(t *testing.T) {
	cases := []struct {
		name string
		c    computed
		ts   uint64
		want string
	}{
		{"epoch date_time", compDateTime, 0, `"1970-01-01T00:00:00Z"`},
		{"sub-second truncated", compDateTime, 999_999, `"1970-01-01T00:00:00Z"`},
		{"last RFC 3339 second", compDateTime, 253402300799_000_000, `"9999-12-31T23:59:59Z"`},
		{"beyond year 9999 falls back to epoch", compDateTime, 253402300800_000_000, `"1970-01-01T00:00:00Z"`},
		{"max micros date_time", compDateTime, 1<<64 - 1, `"1970-01-01T00:00:00Z"`},
		{"nanos zero", compTimestampNanos, 0, `0`},
		{"nanos beyond uint64 stay exact", compTimestampNanos, 1<<64 - 1, `18446744073709551615000`},
		{"millis truncated", compTimestampMillis, 1999, `1`},
		{"seconds truncated", compTimestampSeconds, 1_999_999, `1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := testMeta
			m.timestampMicros = tc.ts
			if got := string(tc.c.appendTo(nil, &m)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestOrderFollowsFile(t *testing.T) {
	const addThenDelete = `
[transforms.add_fields]
enabled = true
fields = [{key = "tag", value.static = "added"}]
[transforms.delete_fields]
enabled = true
fields = ["tag", "secret"]`
	const deleteThenAdd = `
[transforms.delete_fields]
enabled = true
fields = ["tag", "secret"]
[transforms.add_fields]
enabled = true
fields = [{key = "tag", value.static = "added"}]`
	const in = `{"tag":"original","secret":1,"x":2}`
	cases := []struct{ name, config, want string }{
		{"add then delete", addThenDelete, `{"x":2}`},
		{"delete then add", deleteThenAdd, `{"x":2,"tag":"added"}`},
	}
	for _, tc := range cases {
		p := newPipelineTOML(t, tc.config)
		if got := run(t, p, in); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	p := newPipelineTOML(t, `
[transforms.add_fields]
enabled = true
fields = [
  {key = "dt", value.computed = "date_time"},
  {key = "ns", value.computed = "timestamp_nanos"},
  {key = "v4", value.computed = "uuid_v4"},
  {key = "v7", value.computed = "uuid_v7"},
  {key = "obj", value.static = {c = 3, b = 2, a = 1, d = {z = 0, y = [1.0, 2]}}},
]
[transforms.update_fields]
enabled = true
fields = [{key = "req", value.computed = "uuid_v4", condition = "key_not_exists"}]`)
	payloads := []string{`{"a":1}`, `{"req":"x","b":[1,2]}`, `{}`}
	render := func() []byte {
		var out []byte
		for i, pl := range payloads {
			var err error
			out, err = p.Transform(out, []byte(pl), "s", "t", 3, uint64(100+i), 1710597751000000+uint64(i)*1500)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
		}
		return out
	}
	first := render()
	// A separately built pipeline stands in for a restarted process.
	p = newPipelineTOML(t, `
[transforms.add_fields]
enabled = true
fields = [
  {key = "dt", value.computed = "date_time"},
  {key = "ns", value.computed = "timestamp_nanos"},
  {key = "v4", value.computed = "uuid_v4"},
  {key = "v7", value.computed = "uuid_v7"},
  {key = "obj", value.static = {c = 3, b = 2, a = 1, d = {z = 0, y = [1.0, 2]}}},
]
[transforms.update_fields]
enabled = true
fields = [{key = "req", value.computed = "uuid_v4", condition = "key_not_exists"}]`)
	if second := render(); string(first) != string(second) {
		t.Errorf("renderings differ:\n%s\n%s", first, second)
	}
	if !strings.Contains(string(first), `"obj":{"a":1,"b":2,"c":3,"d":{"y":[1.0,2],"z":0}}`) {
		t.Errorf("static table not rendered with sorted keys: %s", first)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := newPipelineTOML(t, `
[transforms.unwrap_envelope]
enabled = true
field = "d"
[transforms.filter_fields]
enabled = true
patterns = [{key_pattern = {regex = "^k"}}]
[transforms.add_fields]
enabled = true
fields = [{key = "id", value.computed = "uuid_v4"}, {key = "s", value.static = "x"}]`)
	payload := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"d":{"k%d":"v\u00e9%d","\u006b":%d,"drop":true}}`, i, i, i))
	}
	want := make([]string, 64)
	for i := range want {
		out, err := p.Transform(nil, payload(i), "s", "t", 0, uint64(i), 0)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = string(out)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []byte
			for r := 0; r < 50; r++ {
				for i := range want {
					var err error
					dst, err = p.Transform(dst[:0], payload(i), "s", "t", 0, uint64(i), 0)
					if err != nil || string(dst) != want[i] {
						t.Errorf("message %d: got %s, %v; want %s", i, dst, err, want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestStaticAndDeleteDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items on purpose")
	}
	p := newPipelineTOML(t, `
[transforms.delete_fields]
enabled = true
fields = ["b", "d"]
[transforms.add_fields]
enabled = true
fields = [{key = "e", value.static = "x"}, {key = "a", value.static = {k = [1]}}]`)
	in := []byte(`{"a":1,"b":"two","c":[3],"d":{"x":4}}`)
	dst := make([]byte, 0, 256)
	p.Transform(dst, in, "s", "t", 0, 0, 0) // warm the pool
	allocs := testing.AllocsPerRun(100, func() {
		out, err := p.Transform(dst[:0], in, "s", "t", 0, 0, 0)
		if err != nil || string(out) != `{"a":{"k":[1]},"c":[3],"e":"x"}` {
			t.Fatalf("got %s, %v", out, err)
		}
	})
	// sync.Pool may drop its contents at a GC, so allow a rare miss.
	if allocs > 0.1 {
		t.Errorf("%.2f allocations per message, want 0", allocs)
	}
}

func TestMalformedPayloadIsAnError(t *testing.T) {
	p := newPipelineTOML(t, "[transforms.delete_fields]\nenabled = true\nfields = [\"a\"]")
	for _, in := range []string{`{"a":1`, `{"a" 1}`, `{"a":1,}`, `{a:1}`, `{"a":"x}`, `{"a":[1}`, `{"a":1}x`, `{"a":}`} {
		out, err := p.Transform([]byte("keep"), []byte(in), "s", "t", 0, 9, 0)
		if !errors.Is(err, ErrMalformedPayload) {
			t.Errorf("Transform(%s) error = %v, want ErrMalformedPayload", in, err)
		}
		if string(out) != "keep" {
			t.Errorf("Transform(%s) changed dst to %q", in, out)
		}
	}
}

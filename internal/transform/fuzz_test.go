package transform

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// fuzzConfigs exercise every step kind, so the fuzzer reaches each code path.
var fuzzConfigs = []string{
	`
[transforms.filter_fields]
enabled = true
keep_fields = ["id"]
include_matching = false
patterns = [
  {key_pattern = {regex = "^x"}, value_pattern = {is_number = true}},
  {value_pattern = {contains = "é"}},
  {value_pattern = {equals = {a = [1, "b"]}}},
  {value_pattern = {between = [-1, 1]}},
  {value_pattern = {equals = "a"}},
  {key_pattern = {contains = "\u0000"}},
]
[transforms.unwrap_envelope]
enabled = true
field = "data"
[transforms.delete_fields]
enabled = true
fields = ["a", "b\""]
[transforms.update_fields]
enabled = true
fields = [
  {key = "id", value.computed = "uuid_v7", condition = "key_exists"},
  {key = "n", value.static = 1.5, condition = "key_not_exists"},
]
[transforms.add_fields]
enabled = true
fields = [{key = "a", value.static = {k = ["v", 2]}}, {key = "ts", value.computed = "date_time"}]`,
	`
[transforms.add_fields]
enabled = true
fields = [{key = "data", value.computed = "timestamp_nanos"}]
[transforms.filter_fields]
enabled = true
patterns = [{value_pattern = {regex = "[0-9]+"}}, {value_pattern = {greater_than = 0}}]
[transforms.unwrap_envelope]
enabled = true
field = "data"`,
}

func FuzzPipeline(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"b":2}`, `{"data":{"id":"x","a":null}}`, `{"x1":0.5,"x2":"s","id":[]}`,
		`{"\u0061":"é","b\"":true,"a":1,"a":2}`, `[1,2]`, `"s"`, `null`, `{"data":"1"}`,
		`{"k":{"a":["b",1]},"m":{"a":[1,"b"]},"e":1e400,"n":-0.0}`,
	} {
		f.Add([]byte(s), uint64(7), uint64(1710597751123456))
	}
	pipes := make([]*Pipeline, len(fuzzConfigs))
	for i, c := range fuzzConfigs {
		pipes[i] = newPipelineTOML(f, c)
	}
	f.Fuzz(func(t *testing.T, in []byte, offset, ts uint64) {
		if !json.Valid(in) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, in); err != nil {
			t.Fatal(err)
		}
		payload := compact.Bytes()
		for i, p := range pipes {
			out, err := p.Transform([]byte("x"), payload, "s", "t", 1, offset, ts)
			if err != nil {
				t.Fatalf("config %d: %v", i, err)
			}
			if out[0] != 'x' {
				t.Fatalf("config %d: dst prefix overwritten: %q", i, out)
			}
			out = out[1:]
			if !json.Valid(out) {
				t.Fatalf("config %d: %s -> invalid JSON %s", i, payload, out)
			}
			var again bytes.Buffer
			if err := json.Compact(&again, out); err != nil || !bytes.Equal(again.Bytes(), out) {
				t.Fatalf("config %d: %s -> not compact %s", i, payload, out)
			}
		}
	})
}

// FuzzScanObject checks the top-level scanner against encoding/json: the
// members it finds re-render to the same bytes and their keys unescape to
// what encoding/json decodes.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a\"b":"\\","c":[{"d":"}"}],"e":{"f":"]"}}`, `{"\ud83d\ude00":1,"\ud800":2,"\u00e9\n":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(in, &obj) != nil || obj == nil {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, in); err != nil {
			t.Fatal(err)
		}
		ms, err := scanObject(nil, compact.Bytes())
		if err != nil {
			t.Fatalf("scanObject(%s): %v", compact.Bytes(), err)
		}
		st := &state{members: ms}
		if out := st.render(nil, &msgMeta{}); !bytes.Equal(out, compact.Bytes()) {
			t.Fatalf("re-rendered %s as %s", compact.Bytes(), out)
		}
		for _, m := range ms {
			var want string
			if err := json.Unmarshal(m.key, &want); err != nil {
				t.Fatalf("key %s: %v", m.key, err)
			}
			if got := string(jsonscan.AppendUnquote(nil, m.key)); got != want {
				t.Fatalf("key %s unescaped to %q, encoding/json says %q", m.key, got, want)
			}
			if _, ok := obj[want]; !ok {
				t.Fatalf("key %q not in encoding/json's decoding", want)
			}
		}
	})
}

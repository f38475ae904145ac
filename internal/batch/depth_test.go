package batch

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// deepJSON is a valid JSON object nested depth levels deep.
func deepJSON(depth int) []byte {
	return []byte(strings.Repeat(`{"a":`, depth-1) + `{"v":1}` + strings.Repeat("}", depth-1))
}

// TestDeepPayloadsFollowInvalidPayload (issue 15 item 8): a payload nested
// deeper than readers handle (upstream's serde_json stops at 128; Python's
// json fails well before 10000) is not written as nested JSON: under the
// default it follows invalid_payload, so a json_array object stays readable
// by Python as a whole; max_json_depth raises or lowers the limit.
func TestDeepPayloadsFollowInvalidPayload(t *testing.T) {
	python := testenv.RequireTool(t, "python3")
	deep := deepJSON(5000)
	msgs := []Message{
		{Offset: 1, Timestamp: ts42, Payload: []byte(`{"ok":1}`)},
		{Offset: 2, Timestamp: ts42, Payload: deep},
		{Offset: 3, Timestamp: ts42, Payload: deepJSON(128)},
		{Offset: 4, Timestamp: ts42, Payload: deepJSON(129)},
	}
	for _, schema := range []Schema{SchemaJSON, SchemaRaw} {
		e := mustEncoder(t, appLogs, Options{Format: FormatJSONArray, Schema: schema, IncludeMetadata: true})
		obj := renderObject(t, e, msgs)
		cmd := exec.Command(python, "-c", `import json,sys
recs = json.load(sys.stdin)
print(len(recs), *(type(r["payload"]).__name__ for r in recs))`)
		cmd.Stdin = bytes.NewReader(obj)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("schema %s: Python's json cannot read the object: %v\n%.300s", schema, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "4 dict str dict str" {
			t.Errorf("schema %s: Python reads %q, want the 5000- and 129-deep payloads as base64 strings", schema, got)
		}
		if !bytes.Contains(obj, []byte(base64.StdEncoding.EncodeToString(deep))) {
			t.Errorf("schema %s: the deep payload is not kept as base64", schema)
		}
		if schema == SchemaJSON && e.InvalidPayloads() != 2 {
			t.Errorf("InvalidPayloads = %d, want 2", e.InvalidPayloads())
		}
	}

	fail := mustEncoder(t, appLogs, Options{Format: FormatJSONLines, Schema: SchemaJSON, InvalidPayload: InvalidFail})
	var ipe *InvalidPayloadError
	if _, err := fail.AppendRecord(nil, &msgs[3], true); !errors.As(err, &ipe) || ipe.Offset != 4 || !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("invalid_payload = fail on a 129-deep payload: %v", err)
	}

	for _, tc := range []struct {
		max    int
		nested []bool // per message of msgs
	}{
		{10000, []bool{true, true, true, true}},
		{3, []bool{true, false, false, false}},
	} {
		e := mustEncoder(t, appLogs, Options{Format: FormatJSONLines, Schema: SchemaJSON, MaxJSONDepth: tc.max})
		for i := range msgs {
			rec, err := e.AppendRecord(nil, &msgs[i], true)
			if err != nil {
				t.Fatal(err)
			}
			if nested := bytes.Contains(rec, []byte(`"payload":{`)); nested != tc.nested[i] {
				t.Errorf("max_json_depth %d, message %d: nested = %v, want %v", tc.max, i, nested, tc.nested[i])
			}
		}
	}
}

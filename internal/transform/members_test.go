package transform

import (
	"bytes"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// scanOnly hides TransformMembers, so the encoder hands the whole payload
// and the pipeline splits it itself.
type scanOnly struct{ p *Pipeline }

func (s scanOnly) Transform(dst, payload []byte, stream, topic string, partition uint32, offset, ts uint64) ([]byte, error) {
	return s.p.Transform(dst, payload, stream, topic, partition, offset, ts)
}

// FuzzMembersMatchScan checks that the members the encoder's scan finds
// give exactly the records the pipeline's own split gives, for any payload
// (whitespace, escapes, nesting, invalid JSON) under every step kind.
func FuzzMembersMatchScan(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"password":"x","b":{"c":[1,2,{"d":"}"}]},"internal_id":null}`,
		"{ \"a\" : 1 ,\n \"b\":\t[ 1 , 2 ] , \"data\" : {\"x\": \"y\"} }",
		`{"k\"ey":"v\\","":{},"data":{"inner":true}}`,
		`{}`, `[1,2]`, `"str"`, `{"a":`, `{"a":1}x`,
	} {
		f.Add([]byte(seed))
	}
	pipe := newPipelineTOML(f, `
[transforms.delete_fields]
enabled = true
fields = ["password", "internal_id"]
[transforms.update_fields]
enabled = true
fields = [{key = "b", value.static = 2, condition = "key_exists"}]
[transforms.add_fields]
enabled = true
fields = [{key = "source", value.static = "iggy"}, {key = "id", value.computed = "uuid_v4"}]
[transforms.filter_fields]
enabled = true
include_matching = false
patterns = [{key_pattern = {starts_with = "debug"}}]
[transforms.unwrap_envelope]
enabled = true
field = "data"`)
	part := batch.Partition{Stream: "s", Topic: "t", ID: 3}
	opts := func(tr batch.Transformer) batch.Options {
		return batch.Options{Format: "json_lines", Schema: "json", IncludeMetadata: true, Transformer: tr}
	}
	withMembers, err := batch.NewEncoder(part, opts(pipe))
	if err != nil {
		f.Fatal(err)
	}
	scanning, err := batch.NewEncoder(part, opts(scanOnly{pipe}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		m := batch.Message{Offset: 9, Timestamp: 1710597751000000, Payload: payload}
		a, errA := withMembers.AppendRecord(nil, &m, true)
		b, errB := scanning.AppendRecord(nil, &m, true)
		if (errA == nil) != (errB == nil) || !bytes.Equal(a, b) {
			t.Fatalf("payload %q:\n members: %q (%v)\n scan:    %q (%v)", payload, a, errA, b, errB)
		}
	})
}

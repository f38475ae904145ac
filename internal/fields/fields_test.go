package fields

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

func TestValue(t *testing.T) {
	enc, err := batch.NewEncoder(batch.Partition{Stream: "s", Topic: "t"}, batch.Options{Format: batch.FormatJSONLines, Schema: batch.SchemaJSON})
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := keys.ParseTemplate("{payload.country}/{payload.user.tier}")
	if err != nil {
		t.Fatal(err)
	}
	r := New(tpl.PayloadFields(), keys.DefaultValueSegment)
	d := keys.DefaultValueSegment
	for _, tc := range []struct{ payload, want string }{
		{`{"country":"DE","user":{"tier":"gold"}}`, "DE/gold"},
		{` { "country" : "São Paulo" , "user" : { "tier" : 3 } } `, "S%C3%A3o%20Paulo/3"},
		{`{"country":"a\/b","user":{"tier":true}}`, "a%2Fb/true"},
		{`{"country":null,"user":{"tier":[1]}}`, d + "/" + d},
		{`{"country":{},"user":"gold"}`, d + "/" + d},
		{`{"country":"","user":{}}`, d + "/" + d},
		{`{"country":"_x"}`, "%5Fx/" + d},
		{`not json`, d + "/" + d},
		{`["DE"]`, d + "/" + d},
		{`{"country":-1.5e3}`, "-1.5e3/" + d},
	} {
		if got := r.Value(enc, &batch.Message{Payload: []byte(tc.payload)}); got != tc.want {
			t.Errorf("Value(%s) = %q, want %q", tc.payload, got, tc.want)
		}
		if segs := Segments(r.Value(enc, &batch.Message{Payload: []byte(tc.payload)})); len(segs) != 2 {
			t.Errorf("Segments gives %d segments for two fields", len(segs))
		}
	}
}

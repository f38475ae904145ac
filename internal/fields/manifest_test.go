package fields

import (
	"bytes"
	"strings"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	m := Manifest{Partition: 2, First: 10, Last: 19, Generation: 1, Records: 10, Objects: []ValueObject{
		{Key: "p/c=FR/x", Value: []string{"FR"}, Records: 4, First: 12, Last: 19, Bytes: 40},
		{Key: "p/c=DE/x", Value: []string{"DE"}, Records: 6, Rejected: 1, First: 10, Last: 18, Bytes: 60},
	}}
	b := m.Marshal()
	if !bytes.Equal(b, m.Marshal()) || !bytes.HasSuffix(b, []byte("\n")) || !strings.Contains(string(b), `"objects":[{"key":"p/c=DE/x"`) {
		t.Fatalf("Marshal = %s: not the same bytes each time, or objects not by key", b)
	}
	got, err := ParseManifest(b)
	if err != nil || len(got.Objects) != 2 || got.Objects[0].Key != "p/c=DE/x" || got.Records != 10 {
		t.Fatalf("ParseManifest = %+v, %v", got, err)
	}
	for _, bad := range []string{
		`{"first":5,"last":4,"records":0,"objects":[]}`,
		`{"first":0,"last":9,"records":10,"objects":[{"key":"a","records":9,"first":0,"last":9}]}`,
		`{"first":0,"last":9,"records":10,"objects":[{"key":"a","records":10,"first":0,"last":12}]}`,
		`{"first":0,"last":9,"records":10,"objects":[{"key":"","records":10,"first":0,"last":9}]}`,
		`{"first":0,"last":9,"records":10,"objects":[{"key":"a","records":10,"rejected":11,"first":0,"last":9}]}`,
		`not json`,
	} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("ParseManifest(%s) accepted it", bad)
		}
	}
}

// FuzzParseManifest: any bytes parse or are refused without a panic, and
// what parses holds (its objects' records add up to its range) and marshals
// to bytes that parse to the same manifest.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"partition":0,"first":0,"last":1,"records":2,"objects":[{"key":"k","value":["v"],"records":2,"first":0,"last":1,"bytes":3}]}`))
	f.Add([]byte(`{"first":18446744073709551615,"last":18446744073709551615,"records":1,"objects":[{"key":"k","records":1,"first":18446744073709551615,"last":18446744073709551615}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		var sum uint64
		for _, o := range m.Objects {
			sum += o.Records
		}
		if sum != m.Records || m.Records != m.Last-m.First+1 {
			t.Fatalf("accepted %s: records %d, objects %d, range %d..%d", b, m.Records, sum, m.First, m.Last)
		}
		again, err := ParseManifest(m.Marshal())
		if err != nil || again.Records != m.Records || len(again.Objects) != len(m.Objects) {
			t.Fatalf("%s does not parse back: %v", m.Marshal(), err)
		}
	})
}

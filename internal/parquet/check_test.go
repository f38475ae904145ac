package parquet

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// checkAgrees runs every payload through a Checker and through Write on a
// fresh file with the same options, and fails unless both decide the same,
// with the same reason.
func checkAgrees(t *testing.T, opts Options, payloads [][]byte) {
	t.Helper()
	c, err := NewChecker(opts)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoder(opts)
	if err != nil {
		t.Fatal(err)
	}
	enc.Reset(Source{})
	var out bytes.Buffer
	if err := enc.Begin(&out); err != nil {
		t.Fatal(err)
	}
	for i, p := range payloads {
		cerr := c.Check(p)
		werr := enc.Write(&Record{Offset: uint64(i), Payload: p})
		var re *RecordError
		if werr != nil && !errors.As(werr, &re) {
			t.Fatalf("payload %q: Write: %v", p, werr)
		}
		want := ""
		if re != nil {
			want = re.Err.Error()
		}
		got := ""
		if cerr != nil {
			got = cerr.Error()
		}
		if got != want {
			t.Fatalf("payload %q: Check says %q, Write says %q", p, got, want)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCheckerAgreesWithWrite(t *testing.T) {
	s, err := ParseSchema([]byte(logSchema))
	if err != nil {
		t.Fatal(err)
	}
	payloads := [][]byte{
		[]byte(`{"level":"info","status":200,"code":7,"latency":1.5,"ok":true,"at":"2024-03-16T14:02:31Z","raw":{"x":[1]},"ctx":{"user":"u","ids":[1,2,null]},"spans":[{"name":"a"}]}`),
		[]byte(`{"level":"info"}`),
		[]byte(`{"status":200}`),
		[]byte(`{"level":null}`),
		[]byte(`{"level":"x","status":"200"}`),
		[]byte(`{"level":"x","status":2.5}`),
		[]byte(`{"level":"x","code":3000000000}`),
		[]byte(`{"level":"x","at":"yesterday"}`),
		[]byte(`{"level":"x","ctx":{"ids":["a"]}}`),
		[]byte(`{"level":"x","spans":[{}]}`),
		[]byte(`{"level":"x","spans":[{"name":"a"},{"name":null}]}`),
		[]byte(`{"level":"x","unknown":{"deep":[1,2]}}`),
		[]byte(`{"level":"x","level":7}`),
		[]byte(`[1,2]`),
		[]byte(`"text"`),
		[]byte(`{"level":`),
		[]byte(`{"level":"x",}`),
		[]byte(``),
	}
	for _, extra := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep_extra=%v", extra), func(t *testing.T) {
			checkAgrees(t, Options{Payload: PayloadJSON, Schema: s, KeepExtra: extra}, payloads)
		})
	}
	if _, err := NewChecker(Options{Payload: PayloadJSON}); err == nil {
		t.Error("a Checker without a pinned schema was made")
	}
}

// FuzzCheckerAgreesWithWrite: on any payload a Checker decides as Write.
func FuzzCheckerAgreesWithWrite(f *testing.F) {
	f.Add([]byte(`{"level":"info","ctx":{"ids":[1,"x"]}}`))
	f.Add([]byte(`{"level":"info","spans":[{"name":1}]}`))
	f.Add([]byte(`{"status":1e3}`))
	s, err := ParseSchema([]byte(logSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		checkAgrees(t, Options{Payload: PayloadJSON, Schema: s, KeepExtra: len(p)%2 == 0}, [][]byte{p})
	})
}

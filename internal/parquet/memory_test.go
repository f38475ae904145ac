package parquet

import (
	"io"
	"runtime"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet/internal/logdata"
)

// TestStreamingMemory writes an object of about 70 MB of JSON through the
// two-pass path with 8 MiB row groups, generating the records on the fly
// in both passes: the heap must stay near one row group, far below the
// object's size.
func TestStreamingMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes 70 MB; heap figures mean nothing under the race detector")
	}
	const batches, per = 50, 2000
	enc, err := NewEncoder(Options{Payload: PayloadJSON, IncludeMetadata: true, RowGroupBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var peak uint64
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
	}
	pass := func(fn func(*Record)) {
		for b := range batches {
			for i, p := range logdata.Lines(uint64(b), per) {
				fn(&Record{Offset: uint64(b*per + i), Payload: p})
			}
			runtime.GC() // drop the batch, as a source's reused buffer would
			sample()
		}
	}
	var in int64
	enc.Reset(Source{Stream: "s", Topic: "t"})
	pass(func(r *Record) { enc.Observe(r.Payload); in += int64(len(r.Payload)) })
	if err := enc.Begin(io.Discard); err != nil {
		t.Fatal(err)
	}
	pass(func(r *Record) {
		if err := enc.Write(r); err != nil {
			t.Fatal(err)
		}
	})
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("input %d MB, %d row groups, peak heap %d MiB", in/1e6, len(enc.groups), peak>>20)
	if len(enc.groups) < 5 {
		t.Errorf("%d row groups, want at least 5", len(enc.groups))
	}
	if peak > 48<<20 {
		t.Errorf("peak heap %d MiB for 8 MiB row groups", peak>>20)
	}
}

package transform

import (
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// deleteAddTOML is the benchmark case: delete two fields, add two static ones.
const deleteAddTOML = `
[transforms.delete_fields]
enabled = true
fields = ["password", "internal_id"]
[transforms.add_fields]
enabled = true
fields = [{key = "source", value.static = "iggy"}, {key = "labels", value.static = {team = "data", tier = 2}}]`

func encodeWith(b *testing.B, tr batch.Transformer) (func(i int), int) {
	payload := benchPayload(b)
	e, err := batch.NewEncoder(batch.Partition{Stream: "app_logs", Topic: "users", ID: 1},
		batch.Options{Format: "json_lines", Schema: "json", IncludeMetadata: true, Transformer: tr})
	if err != nil {
		b.Fatal(err)
	}
	m := batch.Message{Timestamp: uint64(time.Date(2024, 3, 16, 14, 2, 31, 0, time.UTC).UnixMicro()), Payload: payload}
	dst := make([]byte, 0, 4<<10)
	return func(i int) {
		m.Offset = uint64(i)
		if dst, err = e.AppendRecord(dst[:0], &m, false); err != nil {
			b.Fatal(err)
		}
	}, len(payload)
}

// BenchmarkJSONLinesTransforms encodes json_lines records of a 1 KiB JSON
// payload with delete_fields + add_fields (static), and without transforms.
func BenchmarkJSONLinesTransforms(b *testing.B) {
	for _, tc := range []struct {
		name string
		toml string
	}{{"none", ""}, {"delete+add", deleteAddTOML}} {
		b.Run(tc.name, func(b *testing.B) {
			var tr batch.Transformer
			if tc.toml != "" {
				tr = newPipelineTOML(b, tc.toml)
			}
			encode, n := encodeWith(b, tr)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				encode(i)
			}
		})
	}
}

// BenchmarkJSONLinesTransformsRatio interleaves both encodings in one loop,
// so that the ratio (with transforms / without) survives a noisy machine.
func BenchmarkJSONLinesTransformsRatio(b *testing.B) {
	plain, _ := encodeWith(b, nil)
	transformed, _ := encodeWith(b, newPipelineTOML(b, deleteAddTOML))
	var tPlain, tTrans time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		for j := 0; j < 64; j++ {
			plain(j)
		}
		mid := time.Now()
		for j := 0; j < 64; j++ {
			transformed(j)
		}
		tPlain += mid.Sub(start)
		tTrans += time.Since(mid)
	}
	b.ReportMetric(float64(tPlain)/float64(tTrans), "ratio")
}

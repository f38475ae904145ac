package parquet

import (
	"io"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet/internal/logdata"
)

// benchRecords is the benchmark input: JSON log payloads of about 0.8 KiB.
func benchRecords(n int) ([]Record, int64) {
	var size int64
	recs := make([]Record, n)
	for i, p := range logdata.Lines(1, n) {
		recs[i] = Record{Offset: uint64(i), Timestamp: 1_700_000_000_000_000 + uint64(i)*1000, Payload: p}
		size += int64(len(p))
	}
	return recs, size
}

// BenchmarkEncode measures both passes over one object of 20,000 records
// (about 16 MiB) held in memory; MB/s counts JSON input bytes.
func BenchmarkEncode(b *testing.B) {
	recs, size := benchRecords(20_000)
	for _, codec := range codecs {
		b.Run(codec, func(b *testing.B) {
			enc, err := NewEncoder(Options{Payload: PayloadJSON, IncludeMetadata: true, Compression: codec})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				encodeRecords(b, enc, recs, io.Discard)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
		})
	}
}

// BenchmarkWriteRecord is pass 2 alone in steady state: allocations per
// record must be 0 for a stable schema.
func BenchmarkWriteRecord(b *testing.B) {
	recs, size := benchRecords(4096)
	enc, err := NewEncoder(Options{Payload: PayloadJSON, IncludeMetadata: true, IncludeHeaders: true})
	if err != nil {
		b.Fatal(err)
	}
	hdrs := []Header{{Key: []byte("app"), Value: []byte("api")}, {Key: []byte("trace"), Value: []byte("abc")}}
	for i := range recs {
		recs[i].Headers = hdrs
	}
	enc.Reset(Source{Stream: "s", Topic: "t"})
	for i := range recs {
		enc.Observe(recs[i].Payload)
	}
	if err := enc.Begin(io.Discard); err != nil {
		b.Fatal(err)
	}
	for i := range recs { // warm the buffers
		enc.Write(&recs[i])
	}
	b.SetBytes(size / int64(len(recs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := enc.Write(&recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkObserve is pass 1 alone.
func BenchmarkObserve(b *testing.B) {
	recs, size := benchRecords(4096)
	enc, _ := NewEncoder(Options{Payload: PayloadJSON})
	enc.Reset(Source{})
	b.SetBytes(size / int64(len(recs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		enc.Observe(recs[i%len(recs)].Payload)
		i++
	}
}

func encodeRecords(b *testing.B, enc *Encoder, recs []Record, w io.Writer) {
	enc.Reset(Source{Stream: "bench", Topic: "logs", Partition: 1})
	for i := range recs {
		enc.Observe(recs[i].Payload)
	}
	if err := enc.Begin(w); err != nil {
		b.Fatal(err)
	}
	for i := range recs {
		if err := enc.Write(&recs[i]); err != nil {
			b.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		b.Fatal(err)
	}
}

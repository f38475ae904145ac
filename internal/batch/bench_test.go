package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const benchPayloads = 64

// logLine returns a realistic structured log line of exactly size bytes
// (size ≥ 900): a request log with ids, numbers, nested fields and a free
// text message padded to length.
func logLine(r *rand.Rand, i, size int) []byte {
	levels := []string{"info", "warn", "error", "debug"}
	methods := []string{"GET", "POST", "PUT", "DELETE"}
	words := strings.Fields("user request completed cache miss upstream timeout retry accepted order payment session token refreshed queue depth shard")
	var msg strings.Builder
	for msg.Len() < 200 {
		msg.WriteString(words[r.IntN(len(words))])
		msg.WriteByte(' ')
	}
	line := fmt.Sprintf(`{"ts":"2024-03-16T14:%02d:%02d.%03dZ","level":"%s","service":"api-gateway","host":"ip-10-0-%d-%d.eu-west-1.compute.internal",`+
		`"trace_id":"%016x%016x","span_id":"%016x","http":{"method":"%s","path":"/api/v1/users/%d/orders","status":%d,"bytes":%d,"latency_ms":%.3f},`+
		`"user":{"id":%d,"tier":"gold","roles":["reader","writer"]},"ua":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",`+
		`"ok":%t,"retry":null,"msg":"%s`,
		i%60, r.IntN(60), r.IntN(1000), levels[r.IntN(4)], r.IntN(255), r.IntN(255),
		r.Uint64(), r.Uint64(), r.Uint64(), methods[r.IntN(4)], r.IntN(1_000_000), 200+r.IntN(4)*100, r.IntN(100_000), r.Float64()*500,
		r.IntN(10_000_000), r.IntN(2) == 0, strings.TrimSpace(msg.String()))
	pad := size - len(line) - len(`"}`)
	if pad < 0 {
		panic("log line too long for size")
	}
	return []byte(line + strings.Repeat("x", pad) + `"}`)
}

func benchLines(size int) [][]byte {
	r := rand.New(rand.NewPCG(7, 8))
	out := make([][]byte, benchPayloads)
	for i := range out {
		out[i] = logLine(r, i, size)
	}
	return out
}

func indented(ps [][]byte) [][]byte {
	out := make([][]byte, len(ps))
	for i, p := range ps {
		var b bytes.Buffer
		if err := json.Indent(&b, p, "", "  "); err != nil {
			panic(err)
		}
		out[i] = b.Bytes()
	}
	return out
}

func benchMessages(payloads [][]byte) []Message {
	headers := wireHeaders(
		strHdr("content-type", "application/json"),
		strHdr("trace-id", "4bf92f3577b34da6a3ce929d0e0e4736"),
		hdr{kindString, []byte("attempt"), kindUint32, le32(1)},
	)
	msgs := make([]Message, len(payloads))
	for i, p := range payloads {
		msgs[i] = Message{Offset: uint64(1000 + i), Timestamp: ts42 + uint64(i)*1000, Headers: headers, Payload: p}
	}
	return msgs
}

func benchEncode(b *testing.B, o Options, payloads [][]byte) {
	msgs := benchMessages(payloads)
	e := mustEncoder(b, appLogs, o)
	dst := make([]byte, 0, 4<<20)
	var err error
	b.SetBytes(int64(len(payloads[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if len(dst) > 3<<20 {
			dst = dst[:0]
		}
		dst, err = e.AppendRecord(dst, &msgs[i%len(msgs)], false)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchStdlibCompact(b *testing.B, payloads [][]byte) {
	var buf bytes.Buffer
	buf.Grow(1 << 20)
	b.SetBytes(int64(len(payloads[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		buf.Reset()
		if err := json.Compact(&buf, payloads[i%len(payloads)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONLines is json_lines with metadata and headers over 1 KiB
// compact JSON payloads; MB/s counts payload bytes, as the stdlib baseline.
func BenchmarkJSONLines(b *testing.B) {
	benchEncode(b, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true, IncludeHeaders: true}, benchLines(1024))
}

// BenchmarkStdlibCompact is encoding/json.Compact over the same payloads.
func BenchmarkStdlibCompact(b *testing.B) { benchStdlibCompact(b, benchLines(1024)) }

// BenchmarkJSONLinesIndented is the slow path: the payloads are indented.
func BenchmarkJSONLinesIndented(b *testing.B) {
	benchEncode(b, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true, IncludeHeaders: true}, indented(benchLines(1024)))
}

// BenchmarkStdlibCompactIndented is json.Compact over the indented payloads.
func BenchmarkStdlibCompactIndented(b *testing.B) { benchStdlibCompact(b, indented(benchLines(1024))) }

// BenchmarkRaw is format raw, schema raw: payload bytes only.
func BenchmarkRaw(b *testing.B) {
	benchEncode(b, Options{Format: "raw", Schema: "raw"}, benchLines(1024))
}

// BenchmarkCopy is a plain copy of the same payload bytes.
func BenchmarkCopy(b *testing.B) {
	payloads := benchLines(1024)
	dst := make([]byte, 0, 4<<20)
	b.SetBytes(int64(len(payloads[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if len(dst) > 3<<20 {
			dst = dst[:0]
		}
		p := payloads[i%len(payloads)]
		n := len(dst)
		dst = dst[:n+len(p)]
		copy(dst[n:], p)
	}
}

// benchObject renders a 4 MiB json_lines object of log records.
func benchObject(b *testing.B) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	e := mustEncoder(b, appLogs, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true})
	var obj []byte
	for i := 0; len(obj) < 4<<20; i++ {
		m := Message{Offset: uint64(i), Timestamp: ts42 + uint64(i)*1000, Payload: logLine(r, i, 900+r.IntN(600))}
		var err error
		if obj, err = e.AppendRecord(obj, &m, i == 0); err != nil {
			b.Fatal(err)
		}
	}
	return obj
}

func benchCompress(b *testing.B, compression Compression) {
	obj := benchObject(b)
	dst, err := Compress(nil, obj, compression)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(obj)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if dst, err = Compress(dst[:0], obj, compression); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(obj))/float64(len(dst)), "ratio")
}

// BenchmarkGzip compresses a 4 MiB json_lines object in one shot.
func BenchmarkGzip(b *testing.B) { benchCompress(b, "gzip") }

// BenchmarkZstd compresses a 4 MiB json_lines object in one shot.
func BenchmarkZstd(b *testing.B) { benchCompress(b, "zstd") }

// BenchmarkObjectWriterZstd streams the messages of a 4 MiB object through
// zstd, the path a spilled object takes.
func BenchmarkObjectWriterZstd(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	var msgs []Message
	var total int64
	for i := 0; total < 4<<20; i++ {
		m := Message{Offset: uint64(i), Timestamp: ts42, Payload: logLine(r, i, 900+r.IntN(600))}
		msgs = append(msgs, m)
		total += int64(len(m.Payload))
	}
	e := mustEncoder(b, appLogs, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true})
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w, err := NewObjectWriter(io.Discard, e, "zstd")
		if err != nil {
			b.Fatal(err)
		}
		for i := range msgs {
			if err := w.Write(&msgs[i]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONLinesRatio interleaves BenchmarkJSONLines' work with
// json.Compact over the same payloads in blocks of 64 records and reports
// how many times faster ours is, so that the figure holds on a busy machine.
func BenchmarkJSONLinesRatio(b *testing.B) {
	payloads := benchLines(1024)
	msgs := benchMessages(payloads)
	e := mustEncoder(b, appLogs, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true, IncludeHeaders: true})
	dst := make([]byte, 0, 1<<20)
	var buf bytes.Buffer
	buf.Grow(4096)
	var ours, std time.Duration
	b.SetBytes(int64(len(payloads)) * int64(len(payloads[0])))
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		dst = dst[:0]
		for i := range msgs {
			var err error
			if dst, err = e.AppendRecord(dst, &msgs[i], false); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for _, p := range payloads {
			buf.Reset()
			if err := json.Compact(&buf, p); err != nil {
				b.Fatal(err)
			}
		}
		std += time.Since(t1)
		ours += t1.Sub(t0)
	}
	b.ReportMetric(float64(std)/float64(ours), "x_stdlib_compact")
}

// BenchmarkRawRatio interleaves format raw / schema raw encoding with a
// plain copy of the same bytes and reports encode speed / copy speed.
func BenchmarkRawRatio(b *testing.B) {
	payloads := benchLines(1024)
	msgs := benchMessages(payloads)
	e := mustEncoder(b, appLogs, Options{Format: "raw", Schema: "raw"})
	dst := make([]byte, 0, 1<<20)
	cp := make([]byte, 1<<20)
	var ours, plain time.Duration
	b.SetBytes(int64(len(payloads)) * int64(len(payloads[0])))
	for b.Loop() {
		t0 := time.Now()
		dst = dst[:0]
		for i := range msgs {
			dst, _ = e.AppendRecord(dst, &msgs[i], false)
		}
		t1 := time.Now()
		n := 0
		for _, p := range payloads {
			n += copy(cp[n:], p)
		}
		plain += time.Since(t1)
		ours += t1.Sub(t0)
	}
	b.ReportMetric(float64(plain)/float64(ours), "x_copy")
}

// benchParquetObject is how many records one benchmarked Parquet object
// holds: the file's per-object work (schema, footer) is spread over them.
const benchParquetObject = 8192

// BenchmarkParquetAccumulator is format parquet on the in-memory path,
// metadata and headers included, over 1 KiB log payloads: Add keeps the
// message (validated, compacted), Render writes the file (both passes,
// zstd). MB/s counts payload bytes; allocs/op is per record.
func BenchmarkParquetAccumulator(b *testing.B) {
	msgs := benchMessages(benchLines(1024))
	e := mustEncoder(b, appLogs, Options{Format: FormatParquet, Schema: SchemaJSON, IncludeMetadata: true, IncludeHeaders: true})
	a := NewAccumulator(e, Rotation{}, 1<<30)
	b.SetBytes(int64(len(msgs[0].Payload)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		m := msgs[i%len(msgs)]
		m.Offset = uint64(i)
		if _, err := a.Add(&m); err != nil {
			b.Fatal(err)
		}
		if a.Len() == benchParquetObject {
			if _, _, err := a.Render(); err != nil {
				b.Fatal(err)
			}
			a.Reset()
		}
	}
}

// BenchmarkParquetObjectWriter is the streamed path of the same objects:
// every record given twice (Observe, then Write).
func BenchmarkParquetObjectWriter(b *testing.B) {
	msgs := benchMessages(benchLines(1024))
	e := mustEncoder(b, appLogs, Options{Format: FormatParquet, Schema: SchemaJSON, IncludeMetadata: true, IncludeHeaders: true})
	b.SetBytes(int64(len(msgs[0].Payload)))
	b.ReportAllocs()
	b.ResetTimer()
	var w *ObjectWriter
	for i := 0; b.Loop(); i++ {
		if i%benchParquetObject == 0 {
			if w != nil {
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			var err error
			if w, err = NewObjectWriter(io.Discard, e, "none"); err != nil {
				b.Fatal(err)
			}
			for j := range benchParquetObject {
				if err := w.Observe(&msgs[j%len(msgs)]); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := w.Write(&msgs[i%len(msgs)]); err != nil {
			b.Fatal(err)
		}
	}
}

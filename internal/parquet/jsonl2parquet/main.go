// Command jsonl2parquet encodes a JSON Lines file (one payload per line) as
// one Parquet file with internal/parquet, for side-by-side comparisons with
// other writers (scripts/bench-parquet.sh) and for looking at the output.
//
//	go run ./internal/parquet/jsonl2parquet [-compression zstd] [-metadata] [-schema pinned.json] [-repeat 3] < in.jsonl > out.parquet
//	go run ./internal/parquet/jsonl2parquet -gen 100000 > logs.jsonl   # the benchmark's log payloads
//
// Records get offsets from 0 and a fixed timestamp, so the output is a pure
// function of the input. It reports the encoding time of the best of
// -repeat runs (both passes, input already in memory) on stderr as
// "encode_seconds=… input_bytes=… rows=… rejected=…".
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet/internal/logdata"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "jsonl2parquet:", err)
		os.Exit(1)
	}
}

func run() error {
	compression := flag.String("compression", "zstd", "zstd, snappy, gzip or none")
	metadata := flag.Bool("metadata", false, "add the metadata columns")
	payload := flag.String("payload", "json", "payload schema: json, text or raw")
	schemaFile := flag.String("schema", "", "a pinned schema file (default: inferred)")
	repeat := flag.Int("repeat", 1, "encode this many times and report the fastest")
	gen := flag.Int("gen", 0, "write this many generated JSON log lines to stdout and exit")
	flag.Parse()
	if *gen > 0 {
		w := bufio.NewWriter(os.Stdout)
		for _, l := range logdata.Lines(1, *gen) {
			w.Write(l)
			w.WriteByte('\n')
		}
		return w.Flush()
	}

	opts := parquet.Options{Payload: *payload, IncludeMetadata: *metadata, Compression: *compression}
	if *schemaFile != "" {
		data, err := os.ReadFile(*schemaFile)
		if err != nil {
			return err
		}
		if opts.Schema, err = parquet.ParseSchema(data); err != nil {
			return err
		}
	}
	input, err := io.ReadAll(bufio.NewReader(os.Stdin))
	if err != nil {
		return err
	}
	lines := bytes.Split(bytes.TrimRight(input, "\n"), []byte("\n"))
	recs := make([]parquet.Record, len(lines))
	for i, l := range lines {
		recs[i] = parquet.Record{Offset: uint64(i), Timestamp: 1_700_000_000_000_000 + uint64(i), Payload: l}
	}
	enc, err := parquet.NewEncoder(opts)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	best := time.Duration(1<<63 - 1)
	rejected := 0
	for range max(1, *repeat) {
		out.Reset()
		start := time.Now()
		rejected, err = encode(enc, &out, recs)
		if err != nil {
			return err
		}
		best = min(best, time.Since(start))
	}
	fmt.Fprintf(os.Stderr, "encode_seconds=%.6f input_bytes=%d rows=%d rejected=%d\n", best.Seconds(), len(input), len(recs)-rejected, rejected)
	_, err = os.Stdout.Write(out.Bytes())
	return err
}

// encode is the in-memory path: both passes over records held in memory.
func encode(enc *parquet.Encoder, w io.Writer, recs []parquet.Record) (rejected int, err error) {
	enc.Reset(parquet.Source{Stream: "bench", Topic: "logs", Partition: 1})
	for i := range recs {
		if err := enc.Observe(recs[i].Payload); err != nil {
			return 0, err
		}
	}
	if err := enc.Begin(w); err != nil {
		return 0, err
	}
	for i := range recs {
		if err := enc.Write(&recs[i]); err != nil {
			var re *parquet.RecordError
			if !errors.As(err, &re) {
				return 0, err
			}
			rejected++
		}
	}
	return rejected, enc.Close()
}

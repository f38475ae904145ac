package parquet_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// The small path: the object's messages are in memory, so both passes run
// over the same slice.
func Example_inMemory() {
	msgs := []batch.Message{
		{Offset: 10, Timestamp: 1_700_000_000_000_000, Payload: []byte(`{"level":"info","n":1}`)},
		{Offset: 11, Timestamp: 1_700_000_000_100_000, Payload: []byte(`{"level":"warn","n":2.5,"ctx":{"user":"bob"}}`)},
		{Offset: 12, Timestamp: 1_700_000_000_200_000, Payload: []byte(`{"level":`)},
	}
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, IncludeMetadata: true, IncludeHeaders: true})
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	var hp batch.HeaderPairs
	var hdrs []parquet.Header

	enc.Reset(parquet.Source{Stream: "app", Topic: "logs", Partition: 1})
	for _, m := range msgs {
		enc.Observe(m.Payload) // pass 1: the schema
	}
	if err := enc.Begin(&out); err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs { // pass 2: the rows
		rec := parquet.Record{Offset: m.Offset, Timestamp: m.Timestamp, Payload: m.Payload}
		if len(m.Headers) > 0 {
			if pairs, err := hp.Decode(m.Headers); err == nil {
				hdrs = hdrs[:0]
				for _, p := range pairs {
					hdrs = append(hdrs, parquet.Header(p))
				}
				rec.Headers = hdrs
			}
		}
		var rejected *parquet.RecordError
		if err := enc.Write(&rec); errors.As(err, &rejected) {
			fmt.Println("to the error object:", rejected)
		} else if err != nil {
			log.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(enc.Rows(), "rows,", bytes.HasPrefix(out.Bytes(), []byte("PAR1")))
	// Output:
	// to the error object: parquet: record at offset 12: payload is not valid JSON (at byte 9 of 9)
	// 2 rows, true
}

// The big-object path: the range is read twice from the source (pass 1 for
// the schema, pass 2 for the rows), and row groups stream to the writer —
// an S3 multipart upload — as they fill; memory holds one row group. The
// bytes equal those of the in-memory path.
func Example_twoPass() {
	read := func(first, last uint64, fn func(offset uint64, payload []byte)) {
		for o := first; o <= last; o++ { // stands for polling Iggy
			fn(o, fmt.Appendf(nil, `{"seq":%d,"even":%v}`, o, o%2 == 0))
		}
	}
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, RowGroupRows: 1000})
	if err != nil {
		log.Fatal(err)
	}
	var upload bytes.Buffer // stands for the multipart upload pipe
	enc.Reset(parquet.Source{Stream: "app", Topic: "events"})
	read(0, 4999, func(_ uint64, p []byte) { enc.Observe(p) })
	if err := enc.Begin(&upload); err != nil {
		log.Fatal(err)
	}
	read(0, 4999, func(o uint64, p []byte) {
		if err := enc.Write(&parquet.Record{Offset: o, Payload: p}); err != nil {
			log.Fatal(err)
		}
	})
	if err := enc.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(enc.Rows(), "rows")
	// Output: 5000 rows
}

// Package parquet writes the records of one object as one Parquet file, in
// pure Go: a schema inferred from JSON payloads or pinned, streamed by row group.
//
// # Use
//
// An Encoder writes one file per object in two passes, so that a file of
// any size needs the memory of one row group only:
//
//	enc, _ := parquet.NewEncoder(parquet.Options{Payload: "json", IncludeMetadata: true})
//	enc.Reset(parquet.Source{Stream: "app", Topic: "logs", Partition: 1})
//	for each record: enc.Observe(payload)        // pass 1: fixes the inferred schema
//	enc.Begin(w)                                 // w: e.g. a multipart upload pipe
//	for each record: err := enc.Write(&record)   // pass 2: rows; full row groups go to w
//	enc.Close()                                  // last row group and footer
//
// On the small path the caller keeps the records in memory and runs both
// passes over them; on the big-object path it reads the range from Iggy
// twice. Both give the same bytes. Write returns a *RecordError (wrapping
// ErrInvalidJSON or ErrSchemaMismatch) for a record it did not write — the
// caller sends it to its error object — and the Encoder goes on; any other
// error is final. Reset starts the next object and keeps the buffers.
// A Checker (NewChecker) decides as Write does whether a payload fits a
// pinned schema, writing nothing, for callers that must know as each
// record arrives.
//
// # Output
//
// Columns, in order: offset INT64, timestamp INT64 TIMESTAMP(UTC, MICROS),
// stream and topic STRING, partition_id INT64 (with IncludeMetadata);
// headers MAP<STRING,STRING> (with IncludeHeaders); then the payload: under
// schema json one column per top-level member, STRUCT for objects, 3-level
// LIST for arrays, as doc.md tabulates; under text a STRING payload column,
// under raw (proto, flatbuffer, avro) a BYTE_ARRAY one. All signed, no
// INT96, no nanoseconds: types Athena, DuckDB and Spark all read.
//
// Pages are v1 data pages, PLAIN or RLE_DICTIONARY (the dictionary is
// judged on a chunk's first 1024 values and dropped for the rest of the
// chunk past DictionaryBytes), levels in the RLE/bit-packed hybrid, every
// page compressed with zstd (default), snappy, gzip or none. Column chunks
// carry null counts, and min/max for INT32, INT64 and DOUBLE.
//
// # Determinism
//
// A file is a pure function of the records, the Source, the Options and
// what Options.Conform returns for its inferred columns:
// no map iteration, no time or random id (created_by is CreatedBy), codecs
// at fixed levels in the calling goroutine, page and row-group cuts taken
// between records from what was written. An object re-rendered after a
// crash has the same bytes; testdata/golden.txt pins them, and CreatedBy's
// version changes whenever they change.
//
// The package imports no AWS or Iggy code and nothing from the rest of the
// module, so that the batch package can depend on it.
package parquet

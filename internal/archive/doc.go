// Package archive reads the sink's objects back into messages: every format
// and compression the sink writes, keeping what each format holds of one.
//
// What comes back, by format (docs/restore.md lists it for users):
//   - offsets: the records' "offset" (include_metadata); without it a
//     caller places the records by the object's range (Record.HasOffset).
//   - time: json records hold the server time to the second; Parquet to
//     the microsecond.
//   - headers: json records and Parquet files hold them as text (the kind
//     of a Raw or numeric header is not kept): a JSON string comes back as
//     a String header, true/false as Bool, an integer as Int64 (Uint64 past
//     its range), another number as Double; Parquet's are all Strings.
//   - payloads: text and json as the records hold them (json compact);
//     raw/proto/flatbuffer/avro payloads the sink wrote as base64 come back
//     as their bytes.
package archive

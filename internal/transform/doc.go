// Package transform applies the upstream connector's JSON transforms
// (add_fields, delete_fields, filter_fields, update_fields, unwrap_envelope)
// to compact JSON payloads, in file order and deterministically.
//
// Differences from the upstream Rust connector, on purpose:
//
//   - Transforms run in the order their [transforms.<type>] tables appear in
//     the file; upstream runs them in hash-map order.
//   - Computed values come from the message, never from the clock or a random
//     source, so an object rendered again after a crash is byte-identical:
//     date_time is the message's server timestamp as RFC 3339 with seconds
//     precision and a "Z" suffix (upstream: now(), with sub-seconds and
//     "+00:00"); timestamp_nanos/micros/millis/seconds are the server
//     timestamp (microseconds) scaled, sub-units truncated; uuid_v4 is a
//     version-4-format UUID whose 122 free bits are the first bits of
//     SHA-256(tag, stream, topic, partition, offset); uuid_v7 has the
//     message timestamp in milliseconds in its first 48 bits and the rest
//     from that hash (with a different tag). Two uuid_v4 fields of one
//     message therefore get the same value.
//   - value_pattern greater_than, less_than and between compare any JSON
//     number, integer or not, as float64; equals compares numbers by value
//     (exactly for two integers).
//   - A bad config (unknown type or field, missing enabled, wrong type, bad
//     regex, empty unwrap_envelope.field, ...) fails at start with a
//     *ConfigError naming the transform and the field.
//
// Only top-level keys are touched. A payload that is not a JSON object passes
// through unchanged. The pipeline works on the compact JSON bytes with a small
// top-level scanner, so delete_fields and static add_fields allocate nothing
// per message beyond growing the destination buffer.
package transform

// Package drain is the sink's run: for every partition this member owns it
// leases the partition, writes offset-ranged objects exactly once, and commits.
//
// One object is written as: record the intent (first, last, key) in the
// state store, upload, mark the range written, store the consumer offset.
// Object bytes are a pure function of the range and the configuration, so a
// run that finds an unfinished intent re-reads exactly that range and
// uploads the same bytes under the same key; a crash at any step therefore
// neither loses nor duplicates a message.
package drain

// Package drain is the sink's run: for every partition this member owns it
// leases the partition and writes offset-ranged objects exactly once.
//
// Per partition a reader (reader.go) polls, accumulates and seals objects by
// the rotation rules, and hands each sealed object over a channel to a
// committer (committer.go), which alone owns the partition's state and runs
// the protocol of docs/guarantee.md: incarnation, recovery, position; then per
// object intent, create-only upload, written (with the next intent), store
// offset; then release. Object bytes are a pure function of the range and
// the configuration, so a run that finds an unfinished intent re-reads
// exactly that range and writes the same bytes under the same key.
package drain

// Package source reads Iggy partitions for the sink, on Iggy 0.8 (the Go SDK v0.8.0 behind a guard) and 0.9/0.10
// (the sink's own client, internal/iggy/vsrconn): connections with deadlines, group membership, explicit-offset polls, offset stores.
package source

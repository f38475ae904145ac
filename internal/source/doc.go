// Package source reads Iggy partitions for the sink through the Go SDK v0.8.0:
// a guarded connection with deadlines, consumer-group membership, explicit-offset polls and offset stores.
package source

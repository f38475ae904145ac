// Package drain is the sink's run: for every partition this member owns it
// leases the partition and writes offset-ranged objects exactly once.
//
// Per partition a reader (reader.go) polls, accumulates and seals objects by
// the rotation rules, and hands each sealed object over a channel to a
// committer (committer.go; drainpartition.go starts both), which runs the protocol of docs/guarantee.md as
// stages, each a type of its own, read in this order: history.go and
// rename.go (incarnation, generations, renames), adopt.go (objects S3 holds
// that the state does not know), upload.go and render.go (the object
// writer: intent key, create-only upload, error objects, re-rendered
// ranges), markers.go (gap, void and other markers), offsets.go (the
// group's offset), lease.go (the one copy of the state, every write to it,
// and its lease). Object bytes are a pure function of the range and the
// configuration, so a run that finds an unfinished intent re-reads exactly
// that range and writes the same bytes under the same key.
package drain

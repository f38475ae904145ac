// Package replay produces an archive back into an Iggy topic, partition p
// into partition p in offset order, each archived message exactly once.
//
// The protocol, per target partition (docs/restore.md says it for users):
//
//   - A lease in the state table (state.Store, under a key of its own:
//     Key.Group "replay:<stream>/<topic>/<generation>") keeps one replayer on a
//     target partition at a time. Every write renews it; a send's deadline
//     is within it.
//   - Each produced chunk is first recorded as the state's intent: the
//     archived offsets it covers and the target offset it must start at.
//     Then it is sent as one batch, then completed (the position moves to
//     the chunk's last archived offset).
//   - Every message produced carries an id that says which archived message
//     it is (MessageID: the archived offset, the generation, and a tag of
//     the archived stream, topic and partition). So the target itself says
//     how far a replay came: after a crash, a replaced state table or a
//     lost reply, the replayer reads the target from the intent's start
//     offset (or its last message), and goes on after the last archived
//     offset the target holds. Where the topic deduplicates by id the
//     server drops a resent chunk too.
//   - A message of the target partition that is not this archive's, where
//     the replay's next message should be, is another producer's: the
//     partition is reported and left, never written into again.
package replay

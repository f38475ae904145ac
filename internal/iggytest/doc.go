// Package iggytest is an in-process Apache Iggy 0.8.0 broker speaking the legacy TCP
// protocol byte-exactly, with in-memory state and fault hooks, for tests and demos.
//
// Fidelity notes (differences from a real server-0.8.0):
//
//   - Consumer-group hand-over is a simplified form of 0.8's cooperative rebalance. On
//     join, unowned partitions are dealt round-robin to idle members (0 partitions);
//     then each idle member may become the target of one pending revocation taken from
//     the end of the list of the member holding the most partitions, if that member holds
//     more than its fair share (ceil(partitions/members)). A revocation completes at once
//     when the group never polled the partition or its committed offset has reached the
//     last polled offset, later when a store or auto-commit reaches it, or after the
//     rebalance timeout (30 s, checked lazily on group operations). Until then the old
//     owner keeps the partition (explicit-id polls and stores work, round-robin polling
//     skips it). Leave and connection close run a full round-robin rebalance. Invariants
//     kept: a partition never has two owners, a lone member owns all partitions, a member
//     with no partitions (or polling a partition it does not own) gets the empty (0,0,0)
//     poll header, a store on a non-owned partition answers 3022.
//   - Member ids are the lowest free number per group (0.8 uses slab indices).
//   - MessagesKey partitioning uses murmur3-32 (seed 0) modulo the partition count,
//     from memory of the 0.8 sources and not verified against a real server.
//   - Malformed requests: the statuses for the frames in TestMalformedFrames were
//     checked against a real server-0.8.0 and match (3 for an unknown identifier kind or
//     a truncated field, 4 for a bad identifier value or an empty stream name, 4031/4033
//     for broken send layouts; a frame length below 4 still reads the 4-byte code).
//     Other malformed fields answer 3 where a real server may answer 4.
//   - Frames larger than 64 MiB (10 MiB for anything but SendMessages) are skipped and
//     answered with 3 rather than closing the connection.
//   - Commands served: 1, 12, 38, 44, 100, 101, 120, 121, 200-203, 300-303, 600-605.
//     Everything else answers 3, including commands a real server knows (users, PAT
//     management, logout, stats, clients, updates, partitions, DeleteConsumerOffset).
//   - CreateTopic echoes expiry 0 as never (u64 max), max size 0 as unlimited (u64 max)
//     and replication 0 as 1: 0.8's server defaults from reading its config, unverified.
//   - One user (WithUser, default iggy/iggy, id 0) with every permission; a failed login
//     leaves an already authenticated session logged in. Tokens never expire.
//   - Single-consumer offsets are keyed by the consumer identifier as sent, so numeric 7
//     and string "7" are different consumers.
//   - Heartbeat eviction is not implemented (it is off by default in 0.8.0 too), nor is
//     message expiry or topic size limits; retention is DeleteBelow.
//   - The conformance tests (IGGY_TEST_ADDRESS) pass against a real server-0.8.0 built
//     from its tag, debug profile, on Linux 6.18; the hook-based tests cannot run there.
package iggytest

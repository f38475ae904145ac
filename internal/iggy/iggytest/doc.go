// Package iggytest is an in-process Apache Iggy broker for tests and demos, with
// in-memory state and fault hooks. It speaks three wire protocols over the same
// state: Iggy 0.8.0's legacy TCP protocol (byte-exact), and the VSR protocols of
// Iggy 0.9 (binary protocol 0.11.0) and Iggy 0.10 (0.12.0), encoded and decoded
// by internal/iggy/vsr.
//
// Each connection speaks what its first 4 bytes say (a legacy frame starts with a
// non-zero length, a VSR header with the zero checksum), and a VSR client's
// dialect is that of its login version. WithProtocol pins one release: "0.8"
// answers a VSR header as a real 0.8 server does (InvalidCommand [3][0]); "0.9"
// and "0.10" wait for 256 bytes of a legacy frame and answer nothing, as a VSR
// server does. Messages are stored as protocol-neutral records (offset, server
// and origin times, id, payload, user headers, send batch), so any protocol reads
// what any other wrote; the admin API (Append, Seed, DeleteBelow, ...) and the
// fault hooks (keyed by command code; a VSR Register counts as 40) work for all.
//
// Fidelity notes for 0.8 (differences from a real server-0.8.0):
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
//     Other malformed fields answer 3 where a real server may answer 4. When the broker
//     is not pinned, a connection whose first frame claims length 0 is taken for VSR.
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
//   - Heartbeat eviction is not implemented for 0.8 (it is off by default in 0.8.0 too),
//     nor is message expiry or topic size limits; retention is DeleteBelow.
//   - The conformance tests (IGGY_TEST_ADDRESS) pass against a real server-0.8.0 built
//     from its tag, debug profile, on Linux 6.18; the hook-based tests cannot run there.
//
// Fidelity notes for 0.9 and 0.10 (written from the protocol references, not
// checked against a real 0.9 or 0.10 server; the released apache-iggy 0.9.0 Python
// client is, see TestPythonClient):
//
//   - Served: 1, 12, 39, 40/45 (Register), 100, 101, 120-122, 200, 202, 203, 300,
//     302, 303, 600-602, 604-606, and on 0.10 also 15 (BindSession) and 105
//     (GetPartitionRoute).
//     Everything else answers status 3; the legacy login codes 38/44 Eviction 15.
//   - Headers failing vsr.ValidateRequest are dropped without a reply. A frame size
//     outside 256..64 MiB closes the connection. Before login only Ping is served;
//     other reads answer status 40, replicated operations Eviction 1 (a replicated
//     request with session 0 fails validation and is dropped). A malformed body
//     answers status 4 (InvalidFormat); what the real server answers is unverified.
//   - Login gate: pinned 0.9 accepts 0.11.x (window 0.11.0..0.11.0 in an eviction),
//     pinned 0.10 exactly 0.12.0 (0.12.0..0.12.0); unpinned accepts both and reports
//     the window 0.11.0..0.12.0 for every refusal (a 0.13 or 0.12.1 login, say). Bad
//     credentials Eviction 9, a bad token 10, a malformed body 15. The reply names the
//     server "0.9.0" or "0.10.0"; user id 0; session numbers count up broker-wide. After
//     a refused login the connection stays open (the real server may close it).
//   - Sessions and group memberships are keyed by client id. A login with the same
//     client id on another connection takes the session over (new session number,
//     memberships kept); the displaced connection stays open and its next request
//     naming the old session gets Eviction 7 (SessionTooLow), its disconnect releases
//     nothing. A TCP disconnect of the bound connection, Logout, a heartbeat eviction
//     and EvictClients end the session: it leaves every group (full rebalance). On
//     0.10 too, although a 0.10 server may keep a session across a TCP loss for
//     BindSession; BindSession here re-attaches a live session (client id, session
//     number or 0, bind secret) and answers the login reply without a result section.
//   - Request numbers are not checked and nothing is deduplicated (metadata replies
//     are not cached, a repeated send appends again). On 0.9 a non-zero
//     request_checksum must be XXH3 of the body (else status 4); 0.10 accepts any.
//     Reply headers echo client, request, operation and request checksum (0.10: and
//     the partition incarnation); op, commit and 0.10's committed flag stay 0.
//   - Errors of metadata operations (202, 203, 302, 303, 602, 604, 605) are result-section
//     codes; offset writes and everything else answer header status. Unknown
//     CreateTopic option keys answer 4042 (result section); accepted keys: the 0.10
//     topic catalog (compression_algorithm, message_expiry, max_topic_size,
//     segment_size, durability, consumer_offset_durability, partition_resize_policy,
//     messages_required_to_save, size_of_messages_required_to_save,
//     preallocate_segments, replication_factor). Only compression ("none"/"gzip"),
//     expiry and max size are interpreted; the block is echoed as the topic's explicit
//     options, the derived block is empty. A stream with options answers 4042.
//   - Consumer groups (0.9 semantics, also on 0.10): Join is cooperative and even —
//     unowned partitions go to the members with the fewest, then partitions move from
//     the member with the most to the one with the fewest until counts differ by at
//     most one; a moved partition goes at once when never polled or committed up to
//     its last poll, else it is pending revocation until a commit reaches that poll or
//     the rebalance timeout (checked lazily on group operations). Leave, disconnect and
//     evictions rebalance round-robin over all members. Every change bumps the
//     generation Sync reports; Sync lists the caller's partitions minus those pending
//     revocation from it. Group polls of a partition the caller does not own, or that
//     is pending revocation from it, or by a non-member, answer the empty poll with
//     partition 0xFFFFFFFF; a group poll without a partition the empty poll of
//     partition 0. Group offset writes need a partition (else status 6) and ownership
//     (pending revocation included), else 5009. The real server's exact rebalance
//     order (which partitions move) is unverified.
//   - Heartbeat (WithHeartbeat, default 30 s): a session holding a membership that
//     sent nothing for 1.2 × interval gets Eviction 13, leaves its groups and loses its
//     connection; checked every interval/5 (at most 1 s).
//   - Poll replies hold one batch record per stored send batch served (a slice of one
//     keeps its base offset and times), with correct frame and batch checksums. A
//     message sent on 0.8 or appended counts as its own batch, or as part of its 0.8
//     SendMessages call. Producer times further than 2^32 µs from their batch's
//     earliest are clamped. Ids sent on VSR are kept as sent (0.8 replaces zero ids).
//   - 0.10: every partition has an incarnation from a broker-wide counter (a
//     re-created topic's partitions get new ones), reported in GetTopic's partition
//     context (0.12 dev layout, members and in-sync lists naming the primary) and
//     poll replies. Poll, Send, Store and DeleteOffset must carry it (else 87);
//     GetConsumerOffset need not. owner_generation: 0 binds to the current owner, a
//     non-zero value must equal the generation at which the caller's group got the
//     partition (else sentinel on polls, 5009 on writes); non-zero on a plain
//     consumer answers 5009. SetPrimary makes partition operations answer 89 on 0.10
//     connections only (0.9 has no NotPrimary); routes report view 1. Deferred and
//     multi-partition polls (106, 108, 109), UpdateResource and the 0.10 metadata
//     watermark (minimum_metadata_op) are not implemented.
//   - Offsets may skip numbers (SkipOffsets), for every protocol.
package iggytest

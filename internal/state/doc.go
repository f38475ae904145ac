// Package state keeps each partition's delivery state (lease, unfinished intent, last written
// offset, counters) in DynamoDB, with conditional writes so two runs can never both advance a partition.
//
// One table, string partition key "pk" = Key.ID(); one item per (group, stream, topic, partition):
//
//	pk            S     Key.ID(): group/stream/topic/partition, '%' and '/' in names escaped as %25 and %2F
//	group_name, stream_name, topic_name S; partition_id N   the Key, readable without parsing pk
//	lease_owner   S     run holding the lease; "" when released
//	lease_expires N     lease expiry, Unix milliseconds; 0 when released
//	version       N     +1 on every successful write; every write but Acquire is conditional on it
//	has_written   BOOL  whether last_written is meaningful
//	last_written  N     last offset durably written to S3 (inclusive) or skipped as a reported gap
//	intent_first, intent_last N; intent_key S   the unfinished object; intent_key "" (and 0, 0) when none
//	last_timestamp N    server time (µs) of message last_written; 0 when unknown (after a gap)
//	intent_first_timestamp N  server time (µs) of message intent_first; evidence of the incarnation
//	incarnation   N     creation time (µs) of the partition incarnation the offsets belong to; absent = none recorded
//	generation    N     incarnations moved through (absent = 0); objects of generation g > 0 carry it in their names
//	objects, messages, bytes, gap_messages N    counters (absent = 0)
//	carried_from_stream, carried_from_topic S   the item this one was carried over from (the partition's
//	                    earlier names, before a rename on the server); absent or "" when none
//	updated_at    N     time of the last write, Unix milliseconds
//	write_id      S     random id of the last write but Acquire; recognises a retried write that already applied,
//	                    and, read back after an error, a write whose every reply was lost
//
// Acquire is a conditional UpdateItem (it may find no item, or another owner's expired one); every
// other write stores the whole item in a PutItem conditioned on owner, version and intent, so a
// write is one short condition, and attributes this version does not know are kept as they were
// when the holder last read the item. So an item is edited by hand only while no lease is held
// (lease_owner ""): an edit under a live lease that leaves version alone is undone by the
// holder's next write.
// Cleared attributes are overwritten with ""/0 instead of removed (minidyn ignores top-level REMOVE).
// Times are kept at millisecond precision by both stores, so Memory and Dynamo return identical States.
package state

// Package icetable registers the sink's Parquet objects in Iceberg tables,
// each exactly once: every commit records each partition's registered range.
//
// The archive in S3 and the sink's state table stay the truth of what is
// archived; a table lags them by at most one run. Each commit's snapshot
// summary, and the table property of the same name, carry every
// partition's position (stream, topic, partition, generation, last
// offset), carried forward from the parent. A run reads that position,
// registers the objects that follow it (its own, and any an earlier run
// archived but did not register), and commits once per table, conditional
// on the parent snapshot: a conflict reloads the table and plans again, so
// no other writer's range is lost and no object is registered twice.
package icetable

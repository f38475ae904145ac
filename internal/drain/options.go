package drain

import (
	"errors"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// Options is everything a run takes from the configuration. The caller
// fills every field, defaults included (internal/app translates the
// configuration once); the run applies no default of its own.
type Options struct {
	// Streams are the streams and topics to drain.
	Streams []Stream
	// Names names objects, gap markers and listing prefixes.
	Names *keys.Namer
	// Records says how messages become records: format, metadata, headers,
	// invalid payloads, transforms. Its Schema is replaced by each stream's.
	Records batch.Options
	// Compression wraps whole objects.
	Compression batch.Compression
	// Rotation decides where objects end.
	Rotation batch.Rotation
	// KeepLimit is the largest object built in memory; a larger one is
	// re-read from Iggy and streamed as a multipart upload.
	KeepLimit int64
	// MaxValues bounds the distinct values of one unit under a path
	// template with payload fields (one object each): a message of one
	// more value ends the unit.
	MaxValues int
	// MaxPollBytes bounds what one poll takes in: the count asked for
	// adapts to the largest message seen, and a message larger than this
	// is reported by a too-large marker instead of archived.
	MaxPollBytes int64
	// Lease is how long a partition's lease lasts; it is renewed every third
	// of it, and writing stops when a renewal fails for too long.
	Lease time.Duration
	// DeadlineMargin: no object is started with less than this left before
	// the run's deadline.
	DeadlineMargin time.Duration
	// PartitionConcurrency is how many partitions are drained at once.
	PartitionConcurrency int
	// CleanupTimeout bounds each cleanup step after the run's context ends:
	// releasing the leases, then leaving the groups.
	CleanupTimeout time.Duration
}

// Stream is one configured stream and how its topics are read.
type Stream struct {
	Name        string
	Topics      []string
	Group       string // consumer group, one per topic
	Schema      batch.Schema
	BatchLength uint32 // messages per poll
}

// Validate reports the first field that cannot work, naming it.
func (o *Options) Validate() error {
	switch {
	case o.Names == nil:
		return errors.New("drain: options: Names is nil")
	case o.Names.HasValues() && o.MaxValues < 1:
		return fmt.Errorf("drain: options: MaxValues %d is below 1 under a path template with payload fields", o.MaxValues)
	case o.KeepLimit < 0:
		return fmt.Errorf("drain: options: KeepLimit %d is negative", o.KeepLimit)
	case o.MaxPollBytes < 1:
		return fmt.Errorf("drain: options: MaxPollBytes %d is below 1", o.MaxPollBytes)
	case o.Lease < time.Millisecond:
		return fmt.Errorf("drain: options: Lease %s is below 1ms", o.Lease)
	case o.DeadlineMargin < 0:
		return fmt.Errorf("drain: options: DeadlineMargin %s is negative", o.DeadlineMargin)
	case o.PartitionConcurrency < 1:
		return fmt.Errorf("drain: options: PartitionConcurrency %d is below 1", o.PartitionConcurrency)
	case o.CleanupTimeout <= 0:
		return fmt.Errorf("drain: options: CleanupTimeout %s is not positive", o.CleanupTimeout)
	}
	for _, s := range o.Streams {
		if s.BatchLength == 0 {
			return fmt.Errorf("drain: options: stream %q has BatchLength 0", s.Name)
		}
		if s.Group == "" {
			return fmt.Errorf("drain: options: stream %q has no consumer group", s.Name)
		}
	}
	return nil
}

package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable/sinktables"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/transform"
)

// CleanupTimeout bounds each cleanup step of a run after its context ends:
// releasing the leases, then leaving the groups. A caller with a hard
// deadline (the Lambda) keeps back at least twice this.
const CleanupTimeout = 2 * time.Second

// DrainOptions translates the configuration into the options every run
// takes: the one place where configuration values become typed run
// options. keepLimit ≤ 0 means multipart_threshold.
func DrainOptions(cfg *config.Config, tr batch.Transformer, keepLimit int64) drain.Options {
	pc := &cfg.Plugin
	comp := pc.Compression
	rot := Rotation(pc)
	rot.MaxAge, rot.Cut = pc.MaxFileAge, sinktables.Cut(cfg)
	if keepLimit <= 0 {
		keepLimit = pc.MultipartThreshold
	}
	streams := make([]drain.Stream, len(cfg.Streams))
	for i, s := range cfg.Streams {
		streams[i] = drain.Stream{Name: s.Stream, Topics: s.Topics, Group: s.ConsumerGroup, Schema: s.Schema, BatchLength: s.BatchLength}
	}
	return drain.Options{
		Streams:              streams,
		Names:                Names(cfg),
		Records:              RecordOptions(cfg, tr),
		Compression:          comp,
		Rotation:             rot,
		KeepLimit:            keepLimit,
		MaxValues:            int(pc.MaxPartitionValues),
		MaxPollBytes:         pc.MaxPollBytes,
		Lease:                pc.LeaseDuration,
		DeadlineMargin:       pc.DeadlineMargin,
		PartitionConcurrency: pc.PartitionConcurrency,
		CleanupTimeout:       CleanupTimeout,
	}
}

// Names names the configuration's objects: prefix, path template (and its
// payload fields' default segment), format and error prefix.
func Names(cfg *config.Config) *keys.Namer {
	pc := &cfg.Plugin
	n := keys.NewNamer(pc.Prefix, pc.Template, batch.ObjectExt(pc.OutputFormat, pc.Compression)).WithErrors(pc.ErrorsPrefix())
	if pc.DefaultPartitionName != "" {
		n = n.WithDefaultSegment(pc.DefaultPartitionName)
	}
	if pc.Template != nil && pc.Template.HasValues() {
		n = n.WithFingerprint(valuesFingerprint(cfg, n.DefaultSegment()))
	}
	return n
}

// valuesFingerprint digests what decides a record's value under a path
// template with payload fields: the template, the default segment, the
// transforms and the JSON depth limit (a deeper payload is no JSON, so it
// has no field). A unit begun under other ones cannot be finished under
// these: its manifest's name says so.
func valuesFingerprint(cfg *config.Config, def string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", cfg.Plugin.PathTemplate, def, cfg.Plugin.MaxJSONDepth)
	tr, _ := json.Marshal(cfg.Transforms) // tables of plain values: cannot fail
	h.Write(tr)
	return hex.EncodeToString(h.Sum(nil)[:4])
}

// RecordOptions is how the configuration renders records (the drain's and
// `poller render`'s): format, metadata, headers, invalid payloads, JSON
// depth, transforms and the Parquet file's settings. Schema is per stream.
func RecordOptions(cfg *config.Config, tr batch.Transformer) batch.Options {
	pc := &cfg.Plugin
	return batch.Options{Format: pc.OutputFormat, IncludeMetadata: pc.IncludeMetadata, IncludeHeaders: pc.IncludeHeaders,
		InvalidPayload: pc.InvalidPayload, MaxJSONDepth: pc.MaxJSONDepth, Transformer: tr,
		Parquet: batch.ParquetOptions{Compression: string(pc.ParquetCompression), RowGroupBytes: pc.ParquetRowGroupSize,
			PageBytes: int(pc.ParquetPageSize), Schema: pc.PinnedSchema, KeepExtra: pc.ParquetKeepExtra, StatsColumns: pc.PayloadColumns()}}
}

// Rotation is where an object ends by size and count (max_messages_per_file,
// when set, caps the count under either file_rotation); the drain adds the
// age limit and the table cut.
func Rotation(pc *config.Plugin) batch.Rotation {
	return batch.Rotation{MaxBytes: pc.MaxObjectBytes(), MaxMessages: pc.MaxMessagesPerFile}
}

// Transformer is the configuration's [transforms.*] as one pipeline, nil
// when there are none.
func Transformer(cfg *config.Config) (batch.Transformer, error) {
	specs := make([]transform.Spec, len(cfg.Transforms))
	for i, t := range cfg.Transforms {
		specs[i] = transform.Spec{Type: t.Type, Table: t.Table}
	}
	pipe, err := transform.NewPipeline(specs)
	if err != nil || pipe.Len() == 0 {
		return nil, err
	}
	return pipe, nil
}

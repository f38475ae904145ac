//go:build !noiceberg

package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// HasIceberg tells whether this build can register objects in Iceberg
// tables: false only when built with -tags noiceberg.
const HasIceberg = true

// TableCatalog is the Iceberg catalog Options.Catalog can replace.
type TableCatalog = icetable.Catalog

// tableRegistrar registers archived objects in Iceberg tables.
type tableRegistrar = *icetable.Registrar

// tableFiles is where the table's files are read and written: the sink's
// own S3 store, as plugin_config names it.
func (s *Sink) tableFiles() icetable.FileStore {
	p := &s.Config.Plugin
	endpoint := s3Endpoint(p.Endpoint, s.log)
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
	}
	pathStyle := endpoint != ""
	if p.PathStyle != nil {
		pathStyle = *p.PathStyle
	}
	return icetable.FileStore{Endpoint: endpoint, Region: p.Region, PathStyle: pathStyle,
		AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey.Reveal()}
}

// openTables makes the Registrar when table_format = "iceberg".
func (s *Sink) openTables(ctx context.Context, awsCfg aws.Config, cat icetable.Catalog) error {
	p := &s.Config.Plugin
	if !p.Tables() {
		return nil
	}
	files := s.tableFiles()
	if cat == nil {
		octx, cancel := context.WithTimeout(ctx, p.AWSCallTimeout)
		defer cancel()
		var err error
		cat, err = icetable.OpenCatalog(octx, icetable.CatalogOptions{
			Kind: string(p.IcebergCatalog), URI: p.IcebergCatalogURI, Warehouse: p.IcebergWarehouse, Region: s.Config.ServicesRegion,
			AWS: awsCfg, Files: files, ResponseTimeout: p.AWSRequestTimeout,
		})
		if err != nil {
			return err
		}
	}
	var location func(string) string
	if p.Glue() {
		base := p.IcebergWarehouse
		if base == "" {
			base = "s3://" + p.Bucket + "/" + strings.TrimPrefix(strings.Trim(p.Prefix, "/")+"/_iceberg", "/")
		}
		base = strings.TrimSuffix(base, "/")
		location = func(table string) string { return base + "/" + p.IcebergNamespace + "/" + table }
	}
	s.tables = &icetable.Registrar{
		Catalog:     cat,
		Namespace:   p.IcebergNamespace,
		Table:       func(stream, topic string) string { return icetable.TableName(p.IcebergTable, stream, topic) },
		Location:    location,
		Path:        func(key string) string { return "s3://" + p.Bucket + "/" + key },
		FileProps:   files.Props(),
		Backlog:     s.backlog,
		Partition:   tableCut(s.Config).String(),
		Attempts:    10,
		CallTimeout: p.AWSCallTimeout,
		Log:         s.log,
	}
	fixed, err := icetable.FixedColumns(parquet.Options{IncludeMetadata: p.IncludeMetadata, IncludeHeaders: p.IncludeHeaders})
	if err != nil {
		return fmt.Errorf("iceberg: the files' fixed columns: %w", err)
	}
	s.tables.Fixed = fixed
	// Files take their table's column types (a forbidden change goes to
	// the error object, not into a file the table cannot take).
	s.drainOpts.Records.Parquet.Conform = s.tables.Conform
	return nil
}

// backlog lists a partition's archive for the Registrar, as the audit
// reads it (voided keys left out), up to what the state records.
func (s *Sink) backlog(ctx context.Context, id icetable.PartitionID, through icetable.Position) ([]icetable.Item, error) {
	reps, err := audit.Check(ctx, s.Objects, s.drainOpts.Names, []audit.Partition{{Stream: id.Stream, Topic: id.Topic, Partition: id.Partition}})
	if err != nil {
		return nil, err
	}
	var items []icetable.Item
	for _, rep := range reps {
		if rep.Generation > through.Generation {
			break
		}
		for _, r := range rep.Ranges {
			if rep.Generation == through.Generation && r.Last > through.Last {
				break
			}
			items = append(items, icetable.Item{Key: r.Key, Generation: r.Generation, First: r.First, Last: r.Last, Data: !r.Gap && r.Size > 0})
		}
	}
	return items, nil
}

// written collects what a run wrote, per partition, for the Registrar
// (a drain.ObjectHook).
type written struct {
	mu    sync.Mutex
	items map[icetable.PartitionID][]icetable.Item
}

func (w *written) OnObject(p batch.Partition, o drain.Written) {
	n, _ := keys.ParseName(o.Key)
	it := icetable.Item{Key: o.Key, Generation: n.Generation, First: o.First, Last: o.Last, Data: !o.Gap && o.Messages > 0 && o.Bytes > 0}
	id := icetable.PartitionID{Stream: p.Stream, Topic: p.Topic, Partition: p.ID}
	w.mu.Lock()
	w.items[id] = append(w.items[id], it)
	w.mu.Unlock()
}

// TablesHook is told what each run's Iceberg registration did (metrics);
// pass it in Options.Hooks.
type TablesHook interface {
	OnTables(res icetable.Result, err error)
}

// runAndRegister is one run, then (table_format = "iceberg") one commit
// per table of what it and earlier runs archived. A run that crashed, or
// whose context ended, registers nothing: the next run does.
func (s *Sink) runAndRegister(ctx context.Context, r *drain.Runner) (*drain.Summary, error) {
	if s.tables == nil {
		return r.Run(ctx)
	}
	w := &written{items: map[icetable.PartitionID][]icetable.Item{}}
	r.Hooks = append(r.Hooks[:len(r.Hooks):len(r.Hooks)], w)
	sum, err := r.Run(ctx)
	if errors.Is(err, drain.ErrCrash) || ctx.Err() != nil || sum == nil {
		return sum, err
	}
	targets := map[icetable.PartitionID]icetable.Target{}
	for _, p := range sum.Partitions {
		if p.Held || p.Committed == nil {
			continue
		}
		id := icetable.PartitionID{Stream: p.Stream, Topic: p.Topic, Partition: p.Partition}
		targets[id] = icetable.Target{Through: icetable.Position{Generation: p.Generation, Last: *p.Committed}, Items: w.items[id]}
	}
	start := time.Now()
	res, rerr := s.tables.Register(ctx, targets)
	s.log.Info("iceberg registration", "tables", res.Tables, "commits", res.Commits, "conflicts", res.Conflicts,
		"files", res.Files, "listings", res.Listings, "commit_ms", res.Latency.Milliseconds(), "duration", time.Since(start))
	for _, h := range s.opts.Hooks {
		if th, ok := h.(TablesHook); ok {
			th.OnTables(res, rerr)
		}
		if tw, ok := h.(interface{ WriteTables(metrics.Tables) }); ok {
			tw.WriteTables(metrics.Tables{Commits: res.Commits, Conflicts: res.Conflicts, Files: res.Files,
				Latency: res.Latency, Failed: rerr != nil})
		}
	}
	if rerr != nil {
		return sum, errors.Join(err, fmt.Errorf("iceberg: %w (the objects are archived; the next run registers them)", rerr))
	}
	return sum, err
}

// AuditTables checks the Iceberg tables of the audited partitions
// (table_format = "iceberg"; none otherwise): see icetable.Registrar.Check.
func (s *Sink) AuditTables(ctx context.Context, reports []audit.Report) ([]audit.TableReport, error) {
	if s.tables == nil {
		return nil, nil
	}
	var ids []icetable.PartitionID
	seen := map[icetable.PartitionID]bool{}
	through := map[icetable.PartitionID]icetable.Position{}
	for _, r := range reports {
		id := icetable.PartitionID{Stream: r.Stream, Topic: r.Topic, Partition: r.Partition}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		// The state's position, at its generation: registration passes gap
		// markers and empty objects too, so the table reaches it.
		if r.StateWritten != nil && !r.Retired {
			through[id] = icetable.Position{Generation: r.Generation, Last: *r.StateWritten}
		}
	}
	return s.tables.Check(ctx, ids, through)
}

//go:build !noiceberg

package sinktables

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// HasIceberg tells whether this build can register objects in Iceberg
// tables: false only when built with -tags noiceberg.
const HasIceberg = true

// Catalog is the Iceberg catalog Params.Catalog can replace.
type Catalog = icetable.Catalog

// Tables registers what each run archived in the Iceberg tables; a nil
// *Tables (table_format = "none") runs and audits nothing more.
type Tables struct {
	reg *icetable.Registrar
	p   Params
}

// tableFiles is where the table's files are read and written: the sink's
// own S3 store, as plugin_config names it.
func tableFiles(p *config.Plugin, s3Endpoint string) icetable.FileStore {
	endpoint := s3Endpoint
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

// Open makes the tables of p.Config when table_format = "iceberg" (nil
// otherwise), and has the drain's Parquet files take their columns' types.
func Open(ctx context.Context, p Params, records *batch.Options) (*Tables, error) {
	pc := &p.Config.Plugin
	if !pc.Tables() {
		return nil, nil
	}
	files := tableFiles(pc, p.S3Endpoint)
	cat, _ := p.Catalog.(icetable.Catalog)
	if cat == nil {
		octx, cancel := context.WithTimeout(ctx, pc.AWSCallTimeout)
		defer cancel()
		var err error
		cat, err = icetable.OpenCatalog(octx, icetable.CatalogOptions{
			Kind: icetable.CatalogKind(pc.IcebergCatalog), URI: pc.IcebergCatalogURI, Warehouse: pc.IcebergWarehouse, Region: p.Config.ServicesRegion,
			AWS: p.AWS, Files: files, ResponseTimeout: pc.AWSRequestTimeout,
		})
		if err != nil {
			return nil, err
		}
	}
	var location func(string) string
	if pc.Glue() {
		base := pc.IcebergWarehouse
		if base == "" {
			base = "s3://" + pc.Bucket + "/" + strings.TrimPrefix(strings.Trim(pc.Prefix, "/")+"/_iceberg", "/")
		}
		base = strings.TrimSuffix(base, "/")
		location = func(table string) string { return base + "/" + pc.IcebergNamespace + "/" + table }
	}
	t := &Tables{p: p}
	t.reg = &icetable.Registrar{
		Catalog:     cat,
		Namespace:   pc.IcebergNamespace,
		Table:       func(stream, topic string) string { return icetable.TableName(pc.IcebergTable, stream, topic) },
		Location:    location,
		Path:        func(key string) string { return "s3://" + pc.Bucket + "/" + key },
		FileProps:   files.Props(),
		Backlog:     t.backlog,
		Partition:   Cut(p.Config).String(),
		Values:      pc.PayloadColumns(),
		Attempts:    10,
		CallTimeout: pc.AWSCallTimeout,
		Log:         p.Log,
	}
	fixed, err := icetable.FixedColumns(parquet.Options{IncludeMetadata: pc.IncludeMetadata, IncludeHeaders: pc.IncludeHeaders})
	if err != nil {
		return nil, fmt.Errorf("iceberg: the files' fixed columns: %w", err)
	}
	t.reg.Fixed = fixed
	// Files take their table's column types (a forbidden change goes to
	// the error object, not into a file the table cannot take).
	records.Parquet.Conform = t.reg.Conform
	return t, nil
}

// backlog lists a partition's archive for the Registrar, as the audit
// reads it (voided keys left out), up to what the state records.
func (t *Tables) backlog(ctx context.Context, id icetable.PartitionID, through icetable.Position) ([]icetable.Item, error) {
	reps, err := audit.Check(ctx, t.p.Objects, t.p.Names, []audit.Partition{{Stream: id.Stream, Topic: id.Topic, Partition: id.Partition}})
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
			items = append(items, icetable.Item{Key: r.Key, Generation: r.Generation, First: r.First, Last: r.Last, Data: !r.Gap && r.Size > 0, Files: r.Files})
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
	it := icetable.Item{Key: o.Key, Generation: n.Generation, First: o.First, Last: o.Last, Data: !o.Gap && o.Messages > 0 && o.Bytes > 0, Files: o.Values}
	id := icetable.PartitionID{Stream: p.Stream, Topic: p.Topic, Partition: p.ID}
	w.mu.Lock()
	w.items[id] = append(w.items[id], it)
	w.mu.Unlock()
}

// Hook is told what each run's Iceberg registration did (metrics);
// pass it in Options.Hooks.
type Hook interface {
	OnTables(res icetable.Result, err error)
}

// Run is one run, then (table_format = "iceberg") one commit
// per table of what it and earlier runs archived. A run that crashed, or
// whose context ended, registers nothing: the next run does.
func (t *Tables) Run(ctx context.Context, r *drain.Runner) (*drain.Summary, error) {
	if t == nil {
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
	res, rerr := t.reg.Register(ctx, targets)
	t.p.Log.Info("iceberg registration", "tables", res.Tables, "commits", res.Commits, "conflicts", res.Conflicts,
		"files", res.Files, "listings", res.Listings, "commit_ms", res.Latency.Milliseconds(), "duration", time.Since(start))
	for _, h := range t.p.Hooks {
		if th, ok := h.(Hook); ok {
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

// Audit checks the Iceberg tables of the audited partitions
// (table_format = "iceberg"; none otherwise): see icetable.Registrar.Check.
func (t *Tables) Audit(ctx context.Context, reports []audit.Report) ([]audit.TableReport, error) {
	if t == nil {
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
	return t.reg.Check(ctx, ids, through)
}

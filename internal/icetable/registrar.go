package icetable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // s3:// locations
	"github.com/apache/iceberg-go/table"
)

// Catalog is the part of an Iceberg catalog a Registrar uses
// (catalog.Catalog: the REST, S3 Tables and Glue catalogs).
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
	CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error)
	CheckNamespaceExists(ctx context.Context, ns table.Identifier) (bool, error)
	CreateNamespace(ctx context.Context, ns table.Identifier, props iceberg.Properties) error
}

// Target is what one partition is to be registered up to.
type Target struct {
	// Through is the position the sink's state records as archived; the
	// table is brought up to it.
	Through Position
	// Items are the objects and gap markers a run wrote, in order: when
	// they follow the table's position up to Through, no listing is made.
	Items []Item
}

// Backlog lists a partition's archive: every item in offset order,
// generation by generation, up to through (what the state records as
// archived; items past it are unfinished and not registered).
type Backlog func(ctx context.Context, p PartitionID, through Position) ([]Item, error)

// Registrar registers archived objects in Iceberg tables.
type Registrar struct {
	Catalog   Catalog
	Namespace string
	// Table names a topic's table (in Namespace).
	Table func(stream, topic string) string
	// Location is a new table's location; "" lets the catalog choose.
	Location func(table string) string
	// Path is a data object's location as the table records it
	// (s3://bucket/key).
	Path func(key string) string
	// FileProps are the s3.* properties to read data files' footers with
	// (endpoint, region, path style, keys).
	FileProps iceberg.Properties
	Backlog   Backlog
	// Partition is the time transform ("hour", "day", "month", "year") of
	// the timestamp column that partitions a table whose spec never had a
	// field; "" leaves tables unpartitioned. The sink's objects each lie in
	// one such period; a file that spans two (written before tables were
	// on) is registered under the table's unpartitioned spec.
	Partition string
	// Values are the payload fields (dotted paths of columns) the path
	// template splits objects by: each becomes an identity field of the
	// partition spec, after the time transform, once the table has its
	// column (a primitive one). Each of a unit's files holds one value of
	// each, so it lies in exactly one partition.
	Values []string
	// Attempts bounds the commits tried per table when others commit
	// first (conflicts); each attempt reloads the table and plans again.
	Attempts int
	// CallTimeout bounds each catalog call and each footer read.
	CallTimeout time.Duration
	Log         *slog.Logger

	// Fixed are the columns every file has before its payload columns
	// (FixedColumns): a table that Conform creates starts with them.
	Fixed *iceberg.Schema

	// namespaceSeen: the namespace exists (it is never dropped by the sink).
	namespaceSeen atomic.Bool
	schemasMu     sync.Mutex
	schemas       map[string]*tableSchema // Conform's view of each table
}

// Result is what Register did.
type Result struct {
	Tables    int           `json:"tables"`
	Commits   int           `json:"commits"`
	Conflicts int           `json:"conflicts"`
	Files     int           `json:"files"`
	Listings  int           `json:"listings"`
	Latency   time.Duration `json:"-"` // time spent in commits
}

// ErrNotChained reports an archive that does not carry on from the
// table's position: the table holds offsets the archive does not, or the
// archive has a gap it does not report. Nothing is registered for that
// table until it is resolved.
var ErrNotChained = errors.New("icetable: the archive does not carry on from the table's position")

// Register brings every target's table up to its Through position, one
// commit per table (more only on conflicts). Tables are done one after the
// other; the first error stops it.
func (r *Registrar) Register(ctx context.Context, targets map[PartitionID]Target) (Result, error) {
	defer r.forgetSchemas() // the next run's files read each table again
	var res Result
	names, byTable := r.tables(maps.Keys(targets))
	if len(names) > 0 {
		if err := r.ensureNamespace(ctx); err != nil {
			return res, err
		}
	}
	for _, name := range names {
		ids := byTable[name]
		if err := r.registerTable(ctx, name, ids, targets, &res); err != nil {
			return res, err
		}
		res.Tables++
	}
	return res, nil
}

// tables groups partitions by their table: the names sorted, each
// table's partitions in order.
func (r *Registrar) tables(ids iter.Seq[PartitionID]) ([]string, map[string][]PartitionID) {
	byTable := map[string][]PartitionID{}
	for id := range ids {
		name := r.Table(id.Stream, id.Topic)
		byTable[name] = append(byTable[name], id)
	}
	names := slices.Sorted(maps.Keys(byTable))
	for _, ids := range byTable {
		slices.SortFunc(ids, cmpID)
	}
	return names, byTable
}

func cmpID(a, b PartitionID) int {
	switch {
	case a.Stream != b.Stream:
		return cmpStr(a.Stream, b.Stream)
	case a.Topic != b.Topic:
		return cmpStr(a.Topic, b.Topic)
	case a.Partition < b.Partition:
		return -1
	case a.Partition > b.Partition:
		return 1
	}
	return 0
}

func cmpStr(a, b string) int {
	if a < b {
		return -1
	}
	return 1
}

func (r *Registrar) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.CallTimeout)
}

func (r *Registrar) ensureNamespace(ctx context.Context) error {
	if r.namespaceSeen.Load() {
		return nil
	}
	ns := table.Identifier{r.Namespace}
	cctx, cancel := r.call(ctx)
	defer cancel()
	ok, err := r.Catalog.CheckNamespaceExists(cctx, ns)
	if err != nil {
		return fmt.Errorf("icetable: check namespace %q: %w", r.Namespace, err)
	}
	if !ok {
		err = r.Catalog.CreateNamespace(cctx, ns, nil)
		if err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return fmt.Errorf("icetable: create namespace %q: %w", r.Namespace, err)
		}
	}
	r.namespaceSeen.Store(true)
	return nil
}

// plan is one attempt's work for a table.
type plan struct {
	files  []Item
	parent Ranges // the positions of the snapshot planned on
	ranges Ranges // the table's ranges with this attempt's positions
	moved  bool   // some position moved
}

func (r *Registrar) registerTable(ctx context.Context, name string, ids []PartitionID, targets map[PartitionID]Target, res *Result) error {
	ident := table.Identifier{r.Namespace, name}
	backlogs := map[PartitionID][]Item{} // listed once per Register, kept across attempts
	attempts := max(r.Attempts, 1)
	for attempt := 1; ; attempt++ {
		tbl, err := r.load(ctx, ident)
		if err != nil {
			return err
		}
		current, err := registeredOf(tbl)
		if err != nil {
			return fmt.Errorf("icetable: table %s: %w", name, err)
		}
		p, err := r.plan(ctx, current.ranges, ids, targets, backlogs, res)
		if err != nil {
			return fmt.Errorf("icetable: table %s: %w", name, err)
		}
		if current.rewound && len(p.files) > 0 {
			if p.files, err = r.notInTable(ctx, tbl, p.files); err != nil {
				return fmt.Errorf("icetable: table %s: read its data files: %w", name, err)
			}
			r.Log.Warn("iceberg table rolled back: registering again what its current snapshot lacks", "table", name, "files", len(p.files))
		}
		if !p.moved {
			return nil
		}
		start := time.Now()
		err = r.commit(ctx, ident, tbl, p)
		res.Latency += time.Since(start)
		if err == nil {
			res.Commits++
			res.Files += len(p.files)
			r.Log.Info("iceberg commit", "table", name, "files", len(p.files), "attempt", attempt, "duration", time.Since(start))
			return nil
		}
		if isConflict(err) {
			res.Conflicts++
			r.Log.Info("iceberg commit conflict, planning again", "table", name, "attempt", attempt, "error", err.Error())
			if attempt < attempts {
				continue
			}
			return fmt.Errorf("icetable: table %s: %d commits lost to other writers: %w", name, attempt, err)
		}
		// The reply may be lost after the catalog took the commit: the
		// table tells. Its positions already covering ours means it did.
		if again, lerr := r.load(ctx, ident); lerr == nil {
			if cur, rerr := tableRanges(again); rerr == nil && again != nil && cur.Covers(p.ranges) {
				res.Commits++
				res.Files += len(p.files)
				r.Log.Warn("iceberg commit reply failed, but the table holds it", "table", name, "error", err.Error())
				return nil
			}
		}
		return fmt.Errorf("icetable: table %s: commit: %w", name, err)
	}
}

// isConflict reports a commit the catalog refused because another writer
// committed first: nothing of it was written. The REST catalog and
// iceberg-go's retries say so with ErrCommitFailed; Glue and Hadoop
// catalogs check the commit's requirements against the table they load
// before writing, and return the failed requirement as it is.
func isConflict(err error) bool {
	return errors.Is(err, table.ErrCommitFailed) || errors.Is(err, catalog.ErrTableAlreadyExists) ||
		strings.HasPrefix(err.Error(), "requirement failed: ") || strings.Contains(err.Error(), ": requirement failed: ")
}

// load returns the table, or nil when it does not exist yet.
func (r *Registrar) load(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	cctx, cancel := r.call(ctx)
	defer cancel()
	tbl, err := r.Catalog.LoadTable(cctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("icetable: load table %s: %w", ident[len(ident)-1], err)
	}
	return tbl, nil
}

func (r *Registrar) plan(ctx context.Context, current Ranges, ids []PartitionID, targets map[PartitionID]Target, backlogs map[PartitionID][]Item, res *Result) (plan, error) {
	p := plan{parent: current, ranges: Ranges{}}
	for id, pos := range current {
		p.ranges[id] = pos
	}
	for _, id := range ids {
		t := targets[id]
		pos, has := current[id]
		if has && !pos.Before(t.Through) {
			continue
		}
		add, next, ok, err := extend(pos, has, t.Items, false)
		if err != nil {
			return plan{}, fmt.Errorf("partition %s: %w", id, err)
		}
		if !ok || next.Before(t.Through) {
			items, listed := backlogs[id]
			if !listed {
				if items, err = r.Backlog(ctx, id, t.Through); err != nil {
					return plan{}, fmt.Errorf("partition %s: list the archive: %w", id, err)
				}
				backlogs[id] = items
				res.Listings++
			}
			add, next, ok, err = extend(pos, has, items, true)
			if err != nil {
				return plan{}, fmt.Errorf("partition %s: %w", id, err)
			}
			if !ok {
				if !has {
					continue // nothing archived yet
				}
				return plan{}, fmt.Errorf("partition %s at generation %d offset %d: %w", id, pos.Generation, pos.Last, ErrNotChained)
			}
		}
		if has && !pos.Before(next) {
			continue
		}
		p.files = append(p.files, add...)
		p.ranges[id] = next
		p.moved = true
	}
	return p, nil
}

// commit makes one commit of p: the table created when missing, its
// schema widened to every file's columns, the files added and the ranges
// set, conditional on the parent the table was loaded at.
func (r *Registrar) commit(ctx context.Context, ident table.Identifier, tbl *table.Table, p plan) error {
	cctx, cancel := r.call(ctx)
	defer cancel()
	var paths []string
	for _, f := range p.files {
		for _, k := range f.files() {
			paths = append(paths, r.Path(k))
		}
	}
	var schemas []*iceberg.Schema
	var fs iceio.IO
	if len(paths) > 0 {
		// The data files are read with an IO of their own: the table's is
		// bound to the bucket of its location, and the sink's objects may
		// lie in another. Each footer is fetched once, for both reads.
		inner, err := iceio.LoadFS(cctx, r.FileProps, paths[0])
		if err != nil {
			return fmt.Errorf("open the files' store: %w", err)
		}
		fs = newFooterIO(inner)
		if schemas, err = r.fileSchemas(fs, paths); err != nil {
			return err
		}
	}
	if tbl == nil {
		first := iceberg.NewSchema(0)
		if len(schemas) > 0 {
			first = schemas[0]
		}
		created, err := r.create(cctx, ident, first)
		if err != nil {
			return err
		}
		tbl = created
		// The new table has no ranges: what this plan holds stands.
	}
	tx := tbl.NewTransaction()
	// Pinned to the snapshot p was planned on, whatever the table's
	// commit.retry.* say: a retry inside iceberg-go would move the
	// condition to the new head and send p's positions as they were,
	// undoing what the other writer registered (docs/guarantee.md).
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return err
	}
	described := snapshotRef(tbl.CurrentSnapshot())
	for _, s := range schemas {
		// One UpdateSchema per file schema: a union sees only the schema
		// before it, not columns another union of the same update adds.
		if err := tx.UpdateSchema(true, false).UnionByNameWith(s).Commit(); err != nil {
			return fmt.Errorf("%w: %w", ErrSchema, err)
		}
	}
	if len(schemas) > 0 {
		if err := setNameMapping(tx, tbl); err != nil {
			return err
		}
	}
	rs := p.ranges.String()
	if err := tx.SetProperties(iceberg.Properties{RangesProperty: rs}); err != nil {
		return err
	}
	if len(paths) > 0 {
		sc, err := tx.UpdateSchema(true, false).Apply()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSchema, err)
		}
		spec, unpartitioned, err := r.partitionSpec(tx, tbl, sc)
		if err != nil {
			return err
		}
		dfs := make([]iceberg.DataFile, len(paths))
		err = forEach(len(paths), func(i int) error {
			used := spec
			df, err := table.FileToDataFile(cctx, fs, paths[i], sc, used, 0, tbl.Properties())
			if err != nil && unpartitioned != nil && strings.Contains(err.Error(), "more than one value for partition field") {
				used = *unpartitioned
				df, err = table.FileToDataFile(cctx, fs, paths[i], sc, used, 0, tbl.Properties())
			}
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrSchema, paths[i], err)
			}
			if df, err = nullForEmpty(df, used, sc, r.Values); err != nil {
				return err
			}
			dfs[i] = df
			return nil
		})
		if err != nil {
			return err
		}
		// The ranges say which files the table has; a scan of every
		// manifest for duplicates would grow with the table.
		summary := iceberg.Properties{RangesProperty: rs, RangesParentProperty: p.parent.String()}
		if err := tx.AddDataFiles(cctx, dfs, summary, table.WithoutDuplicateCheck()); err != nil {
			if errors.Is(err, table.ErrCommitFailed) {
				return err
			}
			return fmt.Errorf("add files: %w", err)
		}
		staged, err := tx.StagedTable()
		if err != nil {
			return err
		}
		described = snapshotRef(staged.CurrentSnapshot())
	}
	if err := tx.SetProperties(iceberg.Properties{RangesSnapshotProperty: described}); err != nil {
		return err
	}
	_, err := tx.Commit(cctx)
	return err
}

// create creates a new table (format v2, at Location) with schema sc.
func (r *Registrar) create(ctx context.Context, ident table.Identifier, sc *iceberg.Schema) (*table.Table, error) {
	opts := []catalog.CreateTableOpt{catalog.WithProperties(iceberg.Properties{"format-version": "2"})}
	if r.Location != nil {
		if loc := r.Location(ident[len(ident)-1]); loc != "" {
			opts = append(opts, catalog.WithLocation(loc))
		}
	}
	tbl, err := r.Catalog.CreateTable(ctx, ident, sc, opts...)
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	return tbl, nil
}

// setNameMapping sets the name mapping of the transaction's schema. Files
// carry no field ids: readers find columns by this mapping, which must
// name every column, the new ones too.
func setNameMapping(tx *table.Transaction, tbl *table.Table) error {
	sc, err := tx.UpdateSchema(true, false).Apply()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSchema, err)
	}
	m, err := json.Marshal(sc.NameMapping())
	if err != nil {
		return err
	}
	if tbl.Properties().Get(table.DefaultNameMappingKey, "") == string(m) {
		return nil
	}
	return tx.SetProperties(iceberg.Properties{table.DefaultNameMappingKey: string(m)})
}

// TimestampColumn is the column of the message's server time that a
// table's time partition transforms.
const TimestampColumn = "timestamp"

// partitionSpec is the spec the transaction's files are registered under,
// adding the time partition to a table whose spec never had a field, and
// the table's unpartitioned spec, if it has one, for files that span two
// periods.
func (r *Registrar) partitionSpec(tx *table.Transaction, tbl *table.Table, sc *iceberg.Schema) (iceberg.PartitionSpec, *iceberg.PartitionSpec, error) {
	meta := tbl.Metadata()
	var unpartitioned *iceberg.PartitionSpec
	for _, s := range meta.PartitionSpecs() {
		if s.NumFields() == 0 {
			unpartitioned = &s
		}
	}
	current := tbl.Spec()
	addTime := r.timePartition(sc) && len(meta.PartitionSpecs()) == 1 && current.NumFields() == 0
	values := r.valueFields(sc, current)
	if !addTime && len(values) == 0 {
		return current, unpartitioned, nil
	}
	up := tx.UpdateSpec(true)
	if addTime {
		tr, err := iceberg.ParseTransform(r.Partition)
		if err != nil {
			return iceberg.PartitionSpec{}, nil, fmt.Errorf("icetable: partition %q: %w", r.Partition, err)
		}
		up = up.AddField(TimestampColumn, tr, TimestampColumn+"_"+r.Partition)
	}
	for _, v := range values {
		up = up.AddField(v, iceberg.IdentityTransform{}, strings.ReplaceAll(v, ".", "_"))
	}
	if err := up.Commit(); err != nil {
		return iceberg.PartitionSpec{}, nil, fmt.Errorf("partition the table by %s(%s) and the payload fields %v: %w", r.Partition, TimestampColumn, values, err)
	}
	staged, err := tx.StagedTable()
	if err != nil {
		return iceberg.PartitionSpec{}, nil, err
	}
	return staged.Spec(), unpartitioned, nil
}

// timePartition reports whether the table's time partition can be added:
// one is configured and the schema has the timestamp column, as a
// timestamp with a zone.
func (r *Registrar) timePartition(sc *iceberg.Schema) bool {
	f, ok := sc.FindFieldByName(TimestampColumn)
	if r.Partition == "" || !ok {
		return false
	}
	_, tz := f.Type.(iceberg.TimestampTzType)
	return tz
}

// valueFields are the payload fields the spec lacks an identity field of
// and the schema has as a primitive column.
func (r *Registrar) valueFields(sc *iceberg.Schema, spec iceberg.PartitionSpec) []string {
	var out []string
	for _, v := range r.Values {
		f, ok := sc.FindFieldByName(v)
		if !ok {
			continue
		}
		if _, primitive := f.Type.(iceberg.PrimitiveType); !primitive {
			continue
		}
		if len(spec.FieldsBySourceID(f.ID)) == 0 {
			out = append(out, v)
		}
	}
	return out
}

// ErrSchema reports files whose columns the table cannot take (a type
// change Iceberg forbids).
var ErrSchema = errors.New("icetable: the files' columns do not fit the table's schema")

// fileSchemas reads each file's footer for its columns, as Iceberg
// schemas without field ids (one per distinct file schema).
func (r *Registrar) fileSchemas(fs iceio.IO, paths []string) ([]*iceberg.Schema, error) {
	arrow := make([]*arrowSchema, len(paths))
	err := forEach(len(paths), func(i int) error {
		f, err := fs.Open(paths[i])
		if err != nil {
			return fmt.Errorf("open %s: %w", paths[i], err)
		}
		rdr, err := file.NewParquetReader(f)
		if err != nil {
			f.Close()
			return fmt.Errorf("read %s's footer: %w", paths[i], err)
		}
		as, err := arrowOfFooter(rdr)
		rdr.Close()
		if err != nil {
			return fmt.Errorf("read %s's schema: %w", paths[i], err)
		}
		arrow[i] = &arrowSchema{as, paths[i]}
		return nil
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []*iceberg.Schema
	for _, a := range arrow {
		if seen[a.s.String()] {
			continue
		}
		seen[a.s.String()] = true
		s, err := table.ArrowSchemaToIcebergWithFreshIDs(a.s, false)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrSchema, a.path, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func arrowOfFooter(rdr *file.Reader) (*arrow.Schema, error) {
	return pqarrow.FromParquet(rdr.MetaData().Schema, &pqarrow.ArrowReadProperties{}, rdr.MetaData().KeyValueMetadata())
}

// footerSchema is a file's columns as an Iceberg schema without field ids.
func footerSchema(rdr *file.Reader) (*iceberg.Schema, error) {
	as, err := arrowOfFooter(rdr)
	if err != nil {
		return nil, err
	}
	return table.ArrowSchemaToIcebergWithFreshIDs(as, false)
}

type arrowSchema struct {
	s    *arrow.Schema
	path string
}

// fileConcurrency bounds the footers read at once (each a few small S3
// reads: latency, not bandwidth).
const fileConcurrency = 8

// forEach calls fn for 0..n-1, fileConcurrency at a time; the first error wins.
func forEach(n int, fn func(i int) error) error {
	sem := make(chan struct{}, fileConcurrency)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

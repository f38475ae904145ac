// Package icemaint is the maintenance operators run on Iceberg tables,
// done the way engines (Athena, Spark, pyiceberg) do them, for tests: a
// rollback of the main branch, snapshot expiry, a compaction that rewrites
// data files' rows into one new file per partition in one "replace"
// snapshot, and the commit retries multi-writer tables set. Each works on
// any iceberg-go catalog: the table is loaded, changed in one transaction,
// and committed through its catalog.
package icemaint

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Catalog is what the operators need of a catalog (catalog.Catalog has it).
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
}

// commit loads the table, lets act change it in one transaction, and
// commits that.
func commit(ctx context.Context, cat Catalog, ident table.Identifier, act func(tbl *table.Table, tx *table.Transaction) error) error {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("icemaint: load %v: %w", ident, err)
	}
	tx := tbl.NewTransaction()
	if err := act(tbl, tx); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("icemaint: commit: %w", err)
	}
	return nil
}

// Rollback rolls the main branch back steps snapshots, to an ancestor of
// the current snapshot, as Athena, Spark (rollback_to_snapshot) and
// pyiceberg do: the snapshots after it stay in the history, unreferenced,
// and the table's properties are left as they are.
func Rollback(ctx context.Context, cat Catalog, ident table.Identifier, steps int) error {
	return commit(ctx, cat, ident, func(tbl *table.Table, tx *table.Transaction) error {
		snap := tbl.CurrentSnapshot()
		if snap == nil {
			return errors.New("icemaint: rollback: the table has no snapshot")
		}
		for i := 0; i < steps; i++ {
			if snap.ParentSnapshotID == nil {
				return fmt.Errorf("icemaint: rollback %d snapshots: the lineage has only %d", steps, i)
			}
			parent := tbl.SnapshotByID(*snap.ParentSnapshotID)
			if parent == nil {
				return fmt.Errorf("icemaint: rollback %d snapshots: snapshot %d, %d back, was expired", steps, *snap.ParentSnapshotID, i+1)
			}
			snap = parent
		}
		return tx.RollbackToSnapshot(snap.SnapshotID)
	})
}

// ExpireOption changes what Expire does.
type ExpireOption func(*expireConfig)

type expireConfig struct{ keepFiles bool }

// KeepFiles expires from the metadata only, deleting no file, as
// pyiceberg's expire_snapshots does. The default deletes, as Spark's
// expire_snapshots and Athena's VACUUM do, every data file, manifest and
// manifest list that only the expired snapshots referenced (iceberg-go's
// post-commit clean-up).
func KeepFiles() ExpireOption { return func(c *expireConfig) { c.keepFiles = true } }

// Expire expires every snapshot of the main branch's lineage but the last
// keepLast (and any snapshot no branch references), whatever their age.
func Expire(ctx context.Context, cat Catalog, ident table.Identifier, keepLast int, opts ...ExpireOption) error {
	var cfg expireConfig
	for _, o := range opts {
		o(&cfg)
	}
	return commit(ctx, cat, ident, func(_ *table.Table, tx *table.Transaction) error {
		return tx.ExpireSnapshots(table.WithRetainLast(keepLast), table.WithOlderThan(0), table.WithPostCommit(!cfg.keepFiles))
	})
}

// SetRetries sets commit.retry.num-retries to n, with small waits between
// attempts (10 to 50 ms), as tables with several writers commonly have it.
func SetRetries(ctx context.Context, cat Catalog, ident table.Identifier, n int) error {
	return commit(ctx, cat, ident, func(_ *table.Table, tx *table.Transaction) error {
		return tx.SetProperties(iceberg.Properties{
			table.CommitNumRetriesKey:     strconv.Itoa(n),
			table.CommitMinRetryWaitMsKey: "10",
			table.CommitMaxRetryWaitMsKey: "50",
		})
	})
}

// CompactOption changes what Compact does.
type CompactOption func(*compactConfig)

type compactConfig struct {
	files  iceberg.Properties
	only   func(iceberg.DataFile) bool
	copies func(partition, offset int64) int
	props  iceberg.Properties
}

// FileProps are the properties (s3.* and the like) that reach data files
// outside the table's own store, e.g. the S3 objects a Hadoop catalog on a
// local warehouse registers: an engine reaches each scheme with a file
// system of its own.
func FileProps(p iceberg.Properties) CompactOption {
	return func(c *compactConfig) { c.files = p }
}

// Only rewrites the live data files keep accepts (the default: all).
func Only(keep func(df iceberg.DataFile) bool) CompactOption {
	return func(c *compactConfig) { c.only = keep }
}

// RowCopies makes a faulty compaction, for tests of what detects one: each
// row is written copies(partition_id, offset) times (0 drops it, 2 doubles
// it). A row without those columns, or with a null in one, is passed -1.
func RowCopies(copies func(partition, offset int64) int) CompactOption {
	return func(c *compactConfig) { c.copies = copies }
}

// SnapshotProps adds properties to the rewrite snapshot's summary.
func SnapshotProps(p iceberg.Properties) CompactOption {
	return func(c *compactConfig) { c.props = p }
}

// Compacted is what a compaction did.
type Compacted struct {
	// Removed are the data files replaced; Added the files that replace
	// them (one per partition of the table's current spec).
	Removed, Added []iceberg.DataFile
	// Snapshot is the "replace" snapshot's id.
	Snapshot int64
}

// Compact does what an engine's compaction does (Spark rewrite_data_files,
// Athena OPTIMIZE, S3 Tables' automatic compaction): it reads the rows of
// the chosen live data files (deletes applied), partition by partition,
// writes each partition's rows in file order into ONE new Parquet file in
// the table's location (with field ids and the column statistics, lower
// and upper bounds included, that iceberg-go's writer records), and
// replaces the old files with the new in one snapshot of operation
// "replace". The old files stay where they are (snapshot expiry deletes
// them). Files written under the same spec and partition values form a
// group; a group of one file is rewritten too.
func Compact(ctx context.Context, cat Catalog, ident table.Identifier, opts ...CompactOption) (Compacted, error) {
	var cfg compactConfig
	for _, o := range opts {
		o(&cfg)
	}
	var out Compacted
	err := commit(ctx, cat, ident, func(tbl *table.Table, tx *table.Transaction) error {
		if tbl.CurrentSnapshot() == nil {
			return errors.New("icemaint: compact: the table has no snapshot")
		}
		src := tbl
		if cfg.files != nil {
			var err error
			if src, err = withFiles(ctx, tbl, cfg.files); err != nil {
				return err
			}
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return fmt.Errorf("icemaint: compact: plan: %w", err)
		}
		groups := map[string][]table.FileScanTask{}
		for _, t := range tasks {
			if cfg.only != nil && !cfg.only(t.File) {
				continue
			}
			k := fmt.Sprintf("%d/%v", t.File.SpecID(), t.File.Partition())
			groups[k] = append(groups[k], t)
		}
		if len(groups) == 0 {
			return errors.New("icemaint: compact: no data file to rewrite")
		}
		rewrite := tx.NewRewrite(cfg.props)
		for _, k := range slices.Sorted(maps.Keys(groups)) {
			group := groups[k]
			added, err := rewriteGroup(ctx, src, group, cfg.copies)
			if err != nil {
				return fmt.Errorf("icemaint: compact %s: %w", k, err)
			}
			for _, t := range group {
				rewrite.DeleteFile(t.File)
				out.Removed = append(out.Removed, t.File)
			}
			for _, df := range added {
				rewrite.AddFile(df)
				out.Added = append(out.Added, df)
			}
		}
		if err := rewrite.Commit(ctx); err != nil {
			return fmt.Errorf("icemaint: compact: %w", err)
		}
		staged, err := tx.StagedTable()
		if err != nil {
			return err
		}
		out.Snapshot = staged.CurrentSnapshot().SnapshotID
		return nil
	})
	return out, err
}

// rewriteGroup writes the rows of one group's files into new files, one
// per partition of the current spec their rows hold: one, mostly, but the
// sink's default folder of a payload field holds its empty strings in the
// null partition (Hive's), and a rewrite moves them to their own.
func rewriteGroup(ctx context.Context, tbl *table.Table, group []table.FileScanTask, copies func(int64, int64) int) ([]iceberg.DataFile, error) {
	sc, records, err := tbl.Scan().ReadTasks(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if copies != nil {
		records = withCopies(ctx, records, copies)
	}
	wopts := []table.WriteRecordOption{table.WithTargetFileSize(math.MaxInt64 / 2)}
	var added []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, sc, records, wopts...) {
		if err != nil {
			return nil, fmt.Errorf("write: %w", err)
		}
		added = append(added, df)
	}
	return added, nil
}

// withCopies repeats or drops each row of records as copies says.
func withCopies(ctx context.Context, records iter.Seq2[arrow.RecordBatch, error], copies func(int64, int64) int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range records {
			if err != nil {
				yield(nil, err)
				return
			}
			out, err := repeatRows(ctx, rec, copies)
			rec.Release()
			if !yield(out, err) || err != nil {
				return
			}
		}
	}
}

func repeatRows(ctx context.Context, rec arrow.RecordBatch, copies func(int64, int64) int) (arrow.RecordBatch, error) {
	col := func(name string) func(i int) int64 {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return func(int) int64 { return -1 }
		}
		a, ok := rec.Column(idx[0]).(*array.Int64)
		if !ok {
			return func(int) int64 { return -1 }
		}
		return func(i int) int64 {
			if a.IsNull(i) {
				return -1
			}
			return a.Value(i)
		}
	}
	partition, offset := col("partition_id"), col("offset")
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := 0; i < int(rec.NumRows()); i++ {
		for range copies(partition(i), offset(i)) {
			b.Append(int64(i))
		}
	}
	indices := b.NewInt64Array()
	defer indices.Release()
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		c, err := compute.TakeArray(ctx, rec.Column(i), indices)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(indices.Len())), nil
}

// Offsets scans the table as an engine reads it (deletes applied) and
// counts its rows by partition_id and offset; fileProps (may be nil) reach
// data files outside the table's store.
func Offsets(ctx context.Context, cat Catalog, ident table.Identifier, fileProps iceberg.Properties) (map[[2]int64]int, error) {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("icemaint: load %v: %w", ident, err)
	}
	if fileProps != nil {
		if tbl, err = withFiles(ctx, tbl, fileProps); err != nil {
			return nil, err
		}
	}
	out := map[[2]int64]int{}
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	_, records, err := tbl.Scan(table.WithSelectedFields("partition_id", "offset")).ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("icemaint: scan: %w", err)
	}
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("icemaint: scan: %w", err)
		}
		p, ok1 := rec.Column(rec.Schema().FieldIndices("partition_id")[0]).(*array.Int64)
		o, ok2 := rec.Column(rec.Schema().FieldIndices("offset")[0]).(*array.Int64)
		if !ok1 || !ok2 {
			rec.Release()
			return nil, fmt.Errorf("icemaint: scan: partition_id and offset are %s", rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			out[[2]int64{p.Value(i), o.Value(i)}]++
		}
		rec.Release()
	}
	return out, nil
}

// DataFiles lists the live data files of the table's current snapshot
// from its manifests (a scan would pass over files of no rows), each once
// per manifest entry; none for a table without snapshots.
func DataFiles(tbl *table.Table) ([]iceberg.DataFile, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, err
	}
	var out []iceberg.DataFile
	for _, mf := range manifests {
		if mf.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := mf.FetchEntries(fsys, true)
		if err != nil {
			return nil, fmt.Errorf("icemaint: manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			out = append(out, e.DataFile())
		}
	}
	return out, nil
}

package icemaint_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/hadoop"
	"github.com/apache/iceberg-go/table"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/icemaint"
)

var ident = table.Identifier{"iggy", "t"}

// newTable makes a table on the Hadoop catalog (a local warehouse) with
// one data file per batch of offsets of partition 0.
func newTable(t *testing.T, batches ...[2]int64) *hadoop.Catalog {
	t.Helper()
	ctx := context.Background()
	cat, err := hadoop.NewCatalog("test", "file://"+t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"iggy"}, nil); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "partition_id", Type: iceberg.PrimitiveTypes.Int64, Required: false},
		iceberg.NestedField{ID: 2, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: false},
		iceberg.NestedField{ID: 3, Name: "k", Type: iceberg.PrimitiveTypes.String, Required: false},
	)
	if _, err := cat.CreateTable(ctx, ident, sc); err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		appendRows(t, cat, 0, b[0], b[1])
	}
	return cat
}

func appendRows(t *testing.T, cat *hadoop.Catalog, p, first, last int64) {
	t.Helper()
	ctx := context.Background()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "partition_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for off := first; off <= last; off++ {
		b.Field(0).(*array.Int64Builder).Append(p)
		b.Field(1).(*array.Int64Builder).Append(off)
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%d-%d", p, off))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(as, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.Append(ctx, rdr, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, cat *hadoop.Catalog) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// rows reads every (partition_id, offset, k) of the table.
func rows(t *testing.T, cat *hadoop.Catalog) []string {
	t.Helper()
	at, err := load(t, cat).Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []string
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		p := rec.Column(0).(*array.Int64)
		o := rec.Column(1).(*array.Int64)
		k := rec.Column(2).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, fmt.Sprintf("%d/%d/%s", p.Value(i), o.Value(i), k.Value(i)))
		}
	}
	slices.Sort(out)
	return out
}

// liveFiles lists the current snapshot's data files.
func liveFiles(t *testing.T, cat *hadoop.Catalog) []iceberg.DataFile {
	t.Helper()
	tbl := load(t, cat)
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, task := range tasks {
		out = append(out, task.File)
	}
	return out
}

func fieldID(t *testing.T, tbl *table.Table, name string) int {
	t.Helper()
	f, ok := tbl.Schema().FindFieldByName(name)
	if !ok {
		t.Fatalf("no column %s", name)
	}
	return f.ID
}

// long decodes a long bound (Iceberg's single-value serialization).
func long(b []byte) int64 {
	if len(b) != 8 {
		return -1
	}
	return int64(binary.LittleEndian.Uint64(b))
}

func TestCompact(t *testing.T) {
	cat := newTable(t, [2]int64{0, 9}, [2]int64{10, 19}, [2]int64{20, 29})
	before := rows(t, cat)
	if n := len(liveFiles(t, cat)); n != 3 {
		t.Fatalf("%d files before, want 3", n)
	}
	res, err := icemaint.Compact(context.Background(), cat, ident)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 3 || len(res.Added) != 1 {
		t.Fatalf("compaction removed %d and added %d files, want 3 and 1", len(res.Removed), len(res.Added))
	}
	tbl := load(t, cat)
	snap := tbl.CurrentSnapshot()
	if snap.SnapshotID != res.Snapshot || snap.Summary == nil || snap.Summary.Operation != table.OpReplace {
		t.Fatalf("current snapshot %d (%+v), want the compaction's %d of operation replace", snap.SnapshotID, snap.Summary, res.Snapshot)
	}
	files := liveFiles(t, cat)
	if len(files) != 1 || files[0].FilePath() != res.Added[0].FilePath() || files[0].Count() != 30 {
		t.Fatalf("live files after: %v", files)
	}
	if !strings.HasPrefix(files[0].FilePath(), tbl.Location()) {
		t.Errorf("the new file %s is not in the table's location %s", files[0].FilePath(), tbl.Location())
	}
	// The bounds an engine records: offset 0..29, partition_id 0.
	lo, hi := files[0].LowerBoundValues(), files[0].UpperBoundValues()
	off, part := fieldID(t, tbl, "offset"), fieldID(t, tbl, "partition_id")
	if len(lo[off]) != 8 || long(lo[off]) != 0 || len(hi[off]) != 8 || long(hi[off]) != 29 {
		t.Errorf("offset bounds %x..%x, want 0..29", lo[off], hi[off])
	}
	if len(lo[part]) != 8 || long(lo[part]) != 0 || len(hi[part]) != 8 || long(hi[part]) != 0 {
		t.Errorf("partition_id bounds %x..%x, want 0..0", lo[part], hi[part])
	}
	if files[0].ValueCounts()[off] != 30 {
		t.Errorf("offset value count %d, want 30", files[0].ValueCounts()[off])
	}
	if after := rows(t, cat); !slices.Equal(before, after) {
		t.Fatalf("rows changed:\n%v\n%v", before, after)
	}
}

func TestCompactFaulty(t *testing.T) {
	cat := newTable(t, [2]int64{0, 9}, [2]int64{10, 19})
	// Only the first file; offset 3 dropped, offset 4 written twice.
	_, err := icemaint.Compact(context.Background(), cat, ident,
		icemaint.Only(func(df iceberg.DataFile) bool {
			return long(df.UpperBoundValues()[fieldID(t, load(t, cat), "offset")]) == 9
		}),
		icemaint.RowCopies(func(p, off int64) int {
			switch off {
			case 3:
				return 0
			case 4:
				return 2
			}
			return 1
		}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(liveFiles(t, cat)); n != 2 {
		t.Fatalf("%d files, want 2 (one rewritten, one kept)", n)
	}
	got := rows(t, cat)
	var want []string
	for off := int64(0); off <= 19; off++ {
		switch off {
		case 3:
			continue
		case 4:
			want = append(want, "0/4/0-4")
		}
		want = append(want, fmt.Sprintf("0/%d/0-%d", off, off))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

func TestRollbackExpireRetries(t *testing.T) {
	ctx := context.Background()
	cat := newTable(t, [2]int64{0, 9}, [2]int64{10, 19}, [2]int64{20, 29})
	tbl := load(t, cat)
	var lineage []int64
	for s := tbl.CurrentSnapshot(); s != nil; {
		lineage = append(lineage, s.SnapshotID)
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	if len(lineage) != 3 {
		t.Fatalf("lineage %v", lineage)
	}
	if err := icemaint.Rollback(ctx, cat, ident, 2); err != nil {
		t.Fatal(err)
	}
	if cur := load(t, cat).CurrentSnapshot().SnapshotID; cur != lineage[2] {
		t.Fatalf("after a rollback of 2, current %d, want %d", cur, lineage[2])
	}
	if got := rows(t, cat); len(got) != 10 {
		t.Fatalf("%d rows after the rollback, want 10", len(got))
	}
	if err := icemaint.Rollback(ctx, cat, ident, 1); err == nil {
		t.Fatal("a rollback past the first snapshot succeeded")
	}
	appendRows(t, cat, 0, 10, 19)
	appendRows(t, cat, 0, 20, 29)
	if err := icemaint.Expire(ctx, cat, ident, 2, icemaint.KeepFiles()); err != nil {
		t.Fatal(err)
	}
	if n := len(load(t, cat).Metadata().Snapshots()); n != 2 {
		t.Fatalf("%d snapshots after expiring all but 2", n)
	}
	if got := rows(t, cat); len(got) != 30 {
		t.Fatalf("%d rows after expiry, want 30", len(got))
	}
	if err := icemaint.SetRetries(ctx, cat, ident, 4); err != nil {
		t.Fatal(err)
	}
	props := load(t, cat).Properties()
	if props[table.CommitNumRetriesKey] != "4" || props[table.CommitMinRetryWaitMsKey] == "" || props[table.CommitMaxRetryWaitMsKey] == "" {
		t.Fatalf("properties %v", props)
	}
}

// TestExpireDeletesFiles: by default expiry deletes the files only expired
// snapshots referenced, as engines do: after a compaction, the files it
// replaced.
func TestExpireDeletesFiles(t *testing.T) {
	ctx := context.Background()
	cat := newTable(t, [2]int64{0, 9}, [2]int64{10, 19})
	res, err := icemaint.Compact(ctx, cat, ident)
	if err != nil {
		t.Fatal(err)
	}
	if err := icemaint.Expire(ctx, cat, ident, 1); err != nil {
		t.Fatal(err)
	}
	fs, err := load(t, cat).FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, df := range res.Removed {
		if f, err := fs.Open(df.FilePath()); err == nil {
			f.Close()
			t.Errorf("%s, replaced by the compaction, is still there after expiry", df.FilePath())
		}
	}
	if got := rows(t, cat); len(got) != 20 {
		t.Fatalf("%d rows, want 20", len(got))
	}
}

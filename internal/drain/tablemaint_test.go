package drain_test

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/icemaint"
)

// tableOps is the maintenance an operator runs on a schedule's table
// between rounds (issue 42): commit retries turned on (as tables with
// several writers set them), a rollback of one snapshot, snapshot expiry,
// a compaction (internal/testkit/icemaint). Drawn from a generator of its own, so the schedules keep
// their other draws.
type tableOps struct {
	rng     *rand.Rand
	retries bool // commit.retry.num-retries set
}

// tableIdent is the schedule's table of topic.
func (m *model) tableIdent(topic string) table.Identifier {
	cfg := m.w.config(m.set)
	return table.Identifier{cfg.Plugin.IcebergNamespace, icetable.TableName(cfg.Plugin.IcebergTable, m.w.stream, topic)}
}

// loadTable loads the schedule's table of topic (nil: not created yet).
func (m *model) loadTable(topic string) *table.Table {
	tbl, err := m.w.catalog.LoadTable(context.Background(), m.tableIdent(topic))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil
	}
	if err != nil {
		m.t.Fatalf("load the table of %s: %v", topic, err)
	}
	return tbl
}

// operate runs one operator action on topic's table, again when a run
// committed in between (a stalled run may still be going); false when the
// table does not exist yet or the action has nothing to do.
func (m *model) operate(topic, what string, act func(ctx context.Context, cat icemaint.Catalog, ident table.Identifier) error) bool {
	if m.loadTable(topic) == nil {
		return false
	}
	for attempt := 0; attempt < 5; attempt++ {
		err := act(context.Background(), m.w.catalog, m.tableIdent(topic))
		switch {
		case err == nil:
			return true
		case errors.Is(err, errNothingToDo):
			return false
		case errors.Is(err, table.ErrCommitFailed) || strings.Contains(err.Error(), "requirement failed"):
			continue
		}
		m.t.Fatalf("%s: %v", what, err)
	}
	m.note("an operator's %s lost to the sink's commits five times", what)
	return false
}

var errNothingToDo = errors.New("nothing to do")

// maintainTable draws the operator's maintenance of the round.
func (m *model) maintainTable(round int) {
	if !m.iceberg || round == 0 {
		return
	}
	o := &m.ops
	if !o.retries && o.rng.IntN(2) == 0 && m.operate(m.topic, "commit retries", func(ctx context.Context, cat icemaint.Catalog, ident table.Identifier) error {
		return icemaint.SetRetries(ctx, cat, ident, 3)
	}) {
		o.retries = true
		m.note("round %d: the table set to retry commits (commit.retry.num-retries 3)", round)
	}
	switch o.rng.IntN(4) {
	case 0:
		if m.operate(m.topic, "rollback", func(ctx context.Context, cat icemaint.Catalog, ident table.Identifier) error {
			tbl := m.loadTable(m.topic)
			if cur := tbl.CurrentSnapshot(); cur == nil || cur.ParentSnapshotID == nil || tbl.SnapshotByID(*cur.ParentSnapshotID) == nil {
				return errNothingToDo // no parent, or an expired one
			}
			return icemaint.Rollback(ctx, cat, ident, 1)
		}) {
			m.note("round %d: an operator rolled the table back one snapshot", round)
		}
	case 1:
		if m.operate(m.topic, "snapshot expiry", func(ctx context.Context, cat icemaint.Catalog, ident table.Identifier) error {
			if lineageWouldBeLost(m.loadTable(m.topic)) {
				return errNothingToDo
			}
			// From the metadata only: the files no snapshot references any
			// more are archive objects (docs/iceberg.md#maintenance).
			return icemaint.Expire(ctx, cat, ident, 1, icemaint.KeepFiles())
		}) {
			m.note("round %d: an operator expired every snapshot but the current one", round)
		}
	case 2:
		var done icemaint.Compacted
		if m.operate(m.topic, "compaction", func(ctx context.Context, cat icemaint.Catalog, ident table.Identifier) error {
			if m.loadTable(m.topic).CurrentSnapshot() == nil {
				return errNothingToDo
			}
			var err error
			done, err = icemaint.Compact(ctx, cat, ident, icemaint.FileProps(m.dataFileProps()))
			return err
		}) {
			m.note("round %d: an operator compacted the table: %d files rewritten into %d", round, len(done.Removed), len(done.Added))
		}
	}
}

// dataFileProps reach the schedule's archive objects (its own S3).
func (m *model) dataFileProps() iceberg.Properties {
	return icetable.FileStore{Endpoint: m.set["SINK_ENDPOINT"], Region: m.set["SINK_REGION"], PathStyle: true,
		AccessKeyID: m.set["SINK_ACCESS_KEY_ID"], SecretAccessKey: m.set["SINK_SECRET_ACCESS_KEY"]}.Props()
}

// lineageWouldBeLost: the table is rolled back below the snapshot its
// positions name, with no commit of the sink's since (the named snapshot
// lives and is not an ancestor of the current one). Expiring the history
// now leaves nothing that says what the current snapshot holds: the sink
// stops (icetable.ErrLineageLost), or, once another commit moved the
// sequence past the named one's, cannot tell (docs/guarantee.md). The
// schedules leave that expiry out.
func lineageWouldBeLost(tbl *table.Table) bool {
	v, ok := tbl.Properties()[icetable.RangesSnapshotProperty]
	id, _, _ := strings.Cut(v, "/")
	named, err := strconv.ParseInt(id, 10, 64)
	cur := tbl.CurrentSnapshot()
	if !ok || err != nil || cur == nil || tbl.SnapshotByID(named) == nil {
		return false // no snapshot named, or it expired while the current one descended from it
	}
	return !table.IsAncestorOf(cur.SnapshotID, named, tbl.Metadata().SnapshotByID)
}

// tableAuditCatches injects a fault into the quiescent table — one live
// data file registered a second time, or one removed by an operator — and
// checks that the table audit reports it: naming the file when it is an
// archive object, the offsets (and their objects) when it is a
// compaction's file.
func (m *model) tableAuditCatches(s *app.Sink, reports []audit.Report) {
	if !m.iceberg {
		return
	}
	var victim iceberg.DataFile
	twice := m.ops.rng.IntN(2) == 0
	what := "removed"
	if twice {
		what = "registered twice"
	}
	if !m.operate(m.topic, "a file "+what, func(ctx context.Context, cat icemaint.Catalog, ident table.Identifier) error {
		tbl := m.loadTable(m.topic)
		files, err := icemaint.DataFiles(tbl)
		// A file of no rows (every record in the error object) lacks nothing.
		files = slices.DeleteFunc(files, func(df iceberg.DataFile) bool { return df.Count() == 0 })
		if err != nil || len(files) == 0 {
			return cmp.Or(err, errNothingToDo)
		}
		victim = files[m.ops.rng.IntN(len(files))]
		tx := tbl.NewTransaction()
		if twice {
			err = tx.AddDataFiles(ctx, []iceberg.DataFile{victim}, nil, table.WithoutDuplicateCheck())
		} else {
			err = tx.ReplaceDataFilesWithDataFiles(ctx, []iceberg.DataFile{victim}, nil, nil)
		}
		if err == nil {
			_, err = tx.Commit(ctx)
		}
		return err
	}) {
		return
	}
	tables, err := s.AuditTables(context.Background(), reports)
	if err != nil {
		m.t.Fatalf("table audit after a file %s: %v", what, err)
	}
	var found []string
	for _, tr := range tables {
		if twice {
			found = append(found, tr.Twice...)
		} else {
			found = append(found, tr.Missing...)
		}
	}
	archived := strings.HasPrefix(victim.FilePath(), "s3://"+m.set["SINK_BUCKET"]+"/")
	caught := len(found) > 0 && !archived
	for _, f := range found {
		caught = caught || strings.Contains(f, victim.FilePath())
	}
	if !caught {
		m.t.Fatalf("seed %d: the table audit did not report %s %s (an archive object: %v): %q", m.seed, victim.FilePath(), what, archived, found)
	}
	m.note("the table audit reported %s %s: %s", victim.FilePath(), what, strings.Join(found, "; "))
}

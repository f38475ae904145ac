package drain_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
)

// tableOps is the maintenance an operator runs on a schedule's table
// between rounds (issue 42): commit retries turned on (as tables with
// several writers set them), a rollback of one snapshot, snapshot expiry,
// a compaction. Drawn from a generator of its own, so the schedules keep
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

// operate commits one operator action on topic's table, loading it again
// when a run committed in between (a stalled run may still be going);
// false when the table does not exist or act has nothing to do.
func (m *model) operate(topic, what string, act func(tbl *table.Table, tx *table.Transaction) (bool, error)) bool {
	for attempt := 0; attempt < 5; attempt++ {
		tbl := m.loadTable(topic)
		if tbl == nil {
			return false
		}
		tx := tbl.NewTransaction()
		ok, err := act(tbl, tx)
		if err != nil {
			m.t.Fatalf("%s: %v", what, err)
		}
		if !ok {
			return false
		}
		if _, err = tx.Commit(context.Background()); err == nil {
			return true
		}
		if !errors.Is(err, table.ErrCommitFailed) && !strings.Contains(err.Error(), "requirement failed") {
			m.t.Fatalf("%s: commit: %v", what, err)
		}
	}
	m.note("an operator's %s lost to the sink's commits five times", what)
	return false
}

// maintainTable draws the operator's maintenance of the round.
func (m *model) maintainTable(round int) {
	if !m.iceberg || round == 0 {
		return
	}
	o := &m.ops
	if !o.retries && o.rng.IntN(2) == 0 && m.operate(m.topic, "commit retries", func(_ *table.Table, tx *table.Transaction) (bool, error) {
		return true, tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "3", table.CommitMinRetryWaitMsKey: "5", table.CommitMaxRetryWaitMsKey: "20"})
	}) {
		o.retries = true
		m.note("round %d: the table set to retry commits (commit.retry.num-retries 3)", round)
	}
	switch o.rng.IntN(4) {
	case 0:
		if m.operate(m.topic, "rollback", func(tbl *table.Table, tx *table.Transaction) (bool, error) {
			cur := tbl.CurrentSnapshot()
			if cur == nil || cur.ParentSnapshotID == nil {
				return false, nil
			}
			return true, tx.RollbackToSnapshot(*cur.ParentSnapshotID)
		}) {
			m.note("round %d: an operator rolled the table back one snapshot", round)
		}
	case 1:
		if m.operate(m.topic, "snapshot expiry", func(tbl *table.Table, tx *table.Transaction) (bool, error) {
			if lineageWouldBeLost(tbl) {
				return false, nil
			}
			// From the metadata only: the files no snapshot references any
			// more are archive objects (docs/iceberg.md#maintenance).
			return true, tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0), table.WithPostCommit(false))
		}) {
			m.note("round %d: an operator expired every snapshot but the current one", round)
		}
	}
}

// lineageWouldBeLost: the table is rolled back below the snapshot its
// positions name, with no commit of the sink's since; expiring its history
// now is the one case the sink stops on (icetable.ErrLineageLost,
// docs/guarantee.md), so the schedules leave it out.
func lineageWouldBeLost(tbl *table.Table) bool {
	v, ok := tbl.Properties()[icetable.RangesSnapshotProperty]
	cur := tbl.CurrentSnapshot()
	if !ok || cur == nil {
		return false
	}
	_, seqs, _ := strings.Cut(v, "/")
	seq, err := strconv.ParseInt(seqs, 10, 64)
	return err == nil && cur.SequenceNumber < seq
}

// tableAuditCatches injects a fault into the quiescent table — one
// archived object's file registered a second time, or one removed by an
// operator — and checks that the table audit reports it, naming the file.
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
	if !m.operate(m.topic, "a file "+what, func(tbl *table.Table, tx *table.Transaction) (bool, error) {
		files, err := liveDataFiles(tbl)
		if err != nil || len(files) == 0 {
			return false, err
		}
		victim = files[m.ops.rng.IntN(len(files))]
		if twice {
			return true, tx.AddDataFiles(context.Background(), []iceberg.DataFile{victim}, nil, table.WithoutDuplicateCheck())
		}
		return true, tx.ReplaceDataFilesWithDataFiles(context.Background(), []iceberg.DataFile{victim}, nil, nil)
	}) {
		return
	}
	tables, err := s.AuditTables(context.Background(), reports)
	if err != nil {
		m.t.Fatalf("table audit after a file %s: %v", what, err)
	}
	var found []string
	for _, tr := range tables {
		found = append(found, tr.Missing...)
		found = append(found, tr.Twice...)
	}
	caught := false
	for _, f := range found {
		caught = caught || strings.Contains(f, victim.FilePath())
	}
	if !caught {
		m.t.Fatalf("seed %d: the table audit did not report %s %s: %q", m.seed, victim.FilePath(), what, found)
	}
	m.note("the table audit reported %s %s", victim.FilePath(), what)
}

// liveDataFiles are the data files of the table's current snapshot.
func liveDataFiles(tbl *table.Table) ([]iceberg.DataFile, error) {
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
			return nil, fmt.Errorf("manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			out = append(out, e.DataFile())
		}
	}
	return out, nil
}

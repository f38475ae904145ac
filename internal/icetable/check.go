package icetable

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
)

// Check holds each table of the partitions to the archive: every data
// object within a registered range is in the table once, and the table
// holds no other data file. It reads the catalog and lists the archive
// (Backlog); it writes nothing.
//
// through, when it has a partition, is how far the sink's state records it
// archived: a table behind it is noted ("behind"), not a violation, since
// the next run registers the rest.
func (r *Registrar) Check(ctx context.Context, ids []PartitionID, through map[PartitionID]Position) ([]audit.TableReport, error) {
	names, byTable := r.tables(slices.Values(ids))
	var out []audit.TableReport
	for _, name := range names {
		rep, err := r.checkTable(ctx, name, byTable[name], through)
		if err != nil {
			return nil, err
		}
		out = append(out, rep)
	}
	return out, nil
}

func (r *Registrar) checkTable(ctx context.Context, name string, ids []PartitionID, through map[PartitionID]Position) (audit.TableReport, error) {
	rep := audit.TableReport{Table: r.Namespace + "." + name}
	tbl, err := r.load(ctx, table.Identifier{r.Namespace, name})
	if err != nil {
		return rep, err
	}
	if tbl == nil {
		for _, id := range ids {
			if _, ok := through[id]; ok {
				rep.Notes = append(rep.Notes, "behind: the table does not exist yet, though partitions are archived (the next run creates it)")
				break
			}
		}
		if len(rep.Notes) == 0 {
			rep.Notes = append(rep.Notes, "the table does not exist yet (the first run that archives a Parquet object creates it)")
		}
		return rep, nil
	}
	ranges, err := tableRanges(tbl)
	if err != nil {
		return rep, fmt.Errorf("icetable: table %s: %w", name, err)
	}
	count := map[string]int{}
	var files []string
	if snap := tbl.CurrentSnapshot(); snap != nil {
		// The manifests, not a scan: a scan passes over data files of no
		// rows (an object whose every record went to the error object).
		paths, err := dataFiles(ctx, r, tbl, snap)
		if err != nil {
			return rep, fmt.Errorf("icetable: table %s: read its data files: %w", name, err)
		}
		for _, p := range paths {
			if count[p] == 0 {
				files = append(files, p)
			}
			count[p]++
		}
	}
	rep.Files, rep.Partitions = len(files), len(ranges)
	expected := map[string]bool{}
	rangeIDs := make([]PartitionID, 0, len(ranges))
	for id := range ranges {
		rangeIDs = append(rangeIDs, id)
	}
	slices.SortFunc(rangeIDs, cmpID)
	for _, id := range rangeIDs {
		pos := ranges[id]
		items, err := r.Backlog(ctx, id, pos)
		if err != nil {
			return rep, fmt.Errorf("icetable: partition %s: list the archive: %w", id, err)
		}
		for _, it := range items {
			if !it.Data {
				continue
			}
			p := r.Path(it.Key)
			expected[p] = true
			if count[p] == 0 {
				rep.Missing = append(rep.Missing, fmt.Sprintf("%s (partition %s, offsets %d..%d)", p, id, it.First, it.Last))
			}
		}
	}
	for _, p := range files {
		if count[p] > 1 {
			rep.Twice = append(rep.Twice, fmt.Sprintf("%s (%d times)", p, count[p]))
		}
		if !expected[p] {
			rep.Outside = append(rep.Outside, p)
		}
	}
	for _, id := range ids {
		pos, ok := ranges[id]
		want, archived := through[id]
		switch {
		case !ok && archived:
			rep.Notes = append(rep.Notes, fmt.Sprintf("behind: partition %s has no registered range, and is archived up to generation %d offset %d (the next run registers it)", id, want.Generation, want.Last))
		case ok && archived && pos.Before(want):
			rep.Notes = append(rep.Notes, fmt.Sprintf("behind: partition %s is registered up to generation %d offset %d, and archived up to generation %d offset %d (the next run registers the rest)", id, pos.Generation, pos.Last, want.Generation, want.Last))
		}
	}
	return rep, nil
}

// dataFiles lists the live data files of the table's snapshot, once per
// manifest entry.
func dataFiles(ctx context.Context, r *Registrar, tbl *table.Table, snap *table.Snapshot) ([]string, error) {
	cctx, cancel := r.call(ctx)
	defer cancel()
	fsys, err := tbl.FS(cctx)
	if err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, e.DataFile().FilePath())
		}
	}
	return out, nil
}

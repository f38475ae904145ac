package icetable

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
)

// Check holds each table of the partitions to the archive: every offset
// that an archived data object within a registered range holds is in the
// table exactly once, and the table holds no other row. It reads the
// catalog and lists the archive (Backlog); it writes nothing.
//
// The table is its own evidence, as maintenance leaves it: a data file
// that is one of the archive's objects stands for that object's rows (the
// cheap path, all a table the sink alone wrote needs). A file that is not
// (a compaction's rewrite of several objects' rows, or a foreign file) is
// judged by its manifest entry: its partition_id, offset and timestamp
// bounds say which objects it may hold, and when it wholly holds them, no
// other file and no object's own file meets its bounds, and its record
// count equals their rows (read from their footers, with their times),
// each of them is in it once. Only where the bounds cannot decide (a count
// that does not add up, bounds that meet another file's or cut through an
// object, bounds missing) are the file's key columns read and its offsets
// counted. A count that adds up cannot tell a row dropped from a row
// doubled within the same file: a rewrite that did both is found only by
// reading it.
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
	var live []iceberg.DataFile
	if snap := tbl.CurrentSnapshot(); snap != nil {
		// The manifests, not a scan: a scan passes over data files of no
		// rows (an object whose every record went to the error object).
		if live, err = liveDataFiles(ctx, r, tbl, snap); err != nil {
			return rep, fmt.Errorf("icetable: table %s: read its data files: %w", name, err)
		}
	}
	c := newCoverage(ctx, r, tbl, ranges)
	for _, id := range slices.SortedFunc(mapKeys(ranges), cmpID) {
		pos := ranges[id]
		items, err := r.Backlog(ctx, id, pos)
		if err != nil {
			return rep, fmt.Errorf("icetable: partition %s: list the archive: %w", id, err)
		}
		for _, it := range items {
			if it.Data && !pos.Before(Position{it.Generation, it.Last}) {
				c.addObject(id, it)
			}
		}
	}
	if err := c.prove(live, &rep); err != nil {
		return rep, fmt.Errorf("icetable: table %s: %w", name, err)
	}
	rep.Misplaced = r.misplaced(tbl, live)
	rep.Partitions = len(ranges)
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

// dataFiles lists the paths of the live data files of the table's
// snapshot, once per manifest entry.
func dataFiles(ctx context.Context, r *Registrar, tbl *table.Table, snap *table.Snapshot) ([]string, error) {
	files, err := liveDataFiles(ctx, r, tbl, snap)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out, nil
}

// liveDataFiles lists the live data files of the table's snapshot, once
// per manifest entry, with their counts and bounds.
func liveDataFiles(ctx context.Context, r *Registrar, tbl *table.Table, snap *table.Snapshot) ([]iceberg.DataFile, error) {
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
	var out []iceberg.DataFile
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fsys, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, e.DataFile())
		}
	}
	return out, nil
}

// Key columns: what identifies a row of the archive, and the server time
// tables are partitioned by.
const (
	colStream    = "stream"
	colTopic     = "topic"
	colPartition = "partition_id"
	colOffset    = "offset"
)

// box is what bounds say of some rows: a range in each dimension, or
// nothing when the dimension is not known (any value).
type box struct {
	names    [2]string // stream, topic
	namesOK  bool
	pLo, pHi int64 // partition_id
	pOK      bool
	lo, hi   uint64 // offset
	offOK    bool
	tLo, tHi int64 // the timestamp column (µs)
	tOK      bool
}

// meets reports whether a row may lie in both boxes.
func (b box) meets(o box) bool {
	return (!b.namesOK || !o.namesOK || b.names == o.names) &&
		(!b.pOK || !o.pOK || b.pLo <= o.pHi && o.pLo <= b.pHi) &&
		(!b.offOK || !o.offOK || b.lo <= o.hi && o.lo <= b.hi) &&
		(!b.tOK || !o.tOK || b.tLo <= o.tHi && o.tLo <= b.tHi)
}

// contains reports whether every row o allows lies in b.
func (b box) contains(o box) bool {
	return b.namesOK && o.namesOK && b.names == o.names &&
		b.pOK && o.pOK && b.pLo <= o.pLo && o.pHi <= b.pHi &&
		b.offOK && o.offOK && b.lo <= o.lo && o.hi <= b.hi &&
		(!b.tOK || o.tOK && b.tLo <= o.tLo && o.tHi <= b.tHi)
}

// object is one archived data object within a registered range.
type object struct {
	id   PartitionID
	it   Item
	path string
	// own counts the table's entries of the object's own file.
	own int
	// by is the rewritten file whose bounds and count prove it holds the
	// object's rows.
	by *rewritten
	// rows is the object's row count (the table's entry of its file, else
	// its footer; -1 until read), offs the offsets it holds when that is
	// fewer than its range (records that went to the error object), read
	// on demand.
	rows     int64
	offs     []uint64
	offsRead bool
	// box: its partition and range, and its server times (the entry's
	// bounds, else its footer's statistics).
	box box
}

func (o *object) span() int64 { return int64(o.it.Last-o.it.First) + 1 }

func (o *object) covers(off uint64) bool { return o.it.First <= off && off <= o.it.Last }

// rewritten is a data file of the table that is none of the archive's
// objects: a compaction's output, or a foreign file.
type rewritten struct {
	df    iceberg.DataFile
	times int // the table's entries of it
	box   box
	objs  []*object // the objects with rows its box meets
	// foreign: by its bounds, none of its rows is an archived offset.
	foreign bool
	proven  bool
	why     string // why its rows are read: what the bounds could not decide
}

// coverage proves a table's rows against the archive.
type coverage struct {
	ctx    context.Context
	r      *Registrar
	tbl    *table.Table
	ranges Ranges

	objects []*object
	byPath  map[string]*object
	// byGen are each partition's objects per generation, in offset order;
	// gens the same lists in generation order.
	byGen map[PartitionID]map[uint32][]*object
	gens  map[PartitionID][][]*object

	fields struct{ stream, topic, partition, offset, timestamp int } // field ids, 0 when absent
	topics map[[2]string]bool                                        // the registered partitions' streams and topics

	stores *storeIO
}

func newCoverage(ctx context.Context, r *Registrar, tbl *table.Table, ranges Ranges) *coverage {
	c := &coverage{ctx: ctx, r: r, tbl: tbl, ranges: ranges, byPath: map[string]*object{},
		byGen: map[PartitionID]map[uint32][]*object{}, topics: map[[2]string]bool{}}
	sc := tbl.Schema()
	for name, id := range map[string]*int{colStream: &c.fields.stream, colTopic: &c.fields.topic, colPartition: &c.fields.partition,
		colOffset: &c.fields.offset, TimestampColumn: &c.fields.timestamp} {
		if f, ok := sc.FindFieldByName(name); ok {
			*id = f.ID
		}
	}
	for id := range ranges {
		c.topics[[2]string{id.Stream, id.Topic}] = true
	}
	c.stores = &storeIO{ctx: ctx, props: r.FileProps, root: storeRoot(tbl.Location()), tbl: tbl, others: map[string]iceio.IO{}}
	return c
}

// addObject adds an item's data files: the object's own, or each value
// object of a unit (whose rows are some of the unit's range's offsets).
func (c *coverage) addObject(id PartitionID, it Item) {
	for _, key := range it.files() {
		o := &object{id: id, it: it, path: c.r.Path(key), rows: -1}
		o.box = box{names: [2]string{id.Stream, id.Topic}, namesOK: true, pLo: int64(id.Partition), pHi: int64(id.Partition), pOK: true,
			lo: it.First, hi: it.Last, offOK: true}
		c.objects = append(c.objects, o)
		c.byPath[o.path] = o
		gens := c.byGen[id]
		if gens == nil {
			gens = map[uint32][]*object{}
			c.byGen[id] = gens
		}
		gens[it.Generation] = append(gens[it.Generation], o)
	}
}

// generations lists id's objects generation by generation.
func (c *coverage) generations(id PartitionID) [][]*object {
	if c.gens == nil {
		c.gens = map[PartitionID][][]*object{}
	}
	lists, ok := c.gens[id]
	if !ok {
		for _, g := range slices.Sorted(mapKeys(c.byGen[id])) {
			lists = append(lists, c.byGen[id][g])
		}
		c.gens[id] = lists
	}
	return lists
}

// holders lists the objects of id that hold offset off (one per
// generation at most). The value objects of a unit share its range: each
// of them covers off, and the one whose rows hold it holds it.
func (c *coverage) holders(id PartitionID, off uint64) ([]*object, error) {
	var out []*object
	for _, list := range c.generations(id) {
		i, _ := slices.BinarySearchFunc(list, off, func(o *object, off uint64) int {
			switch {
			case o.it.Last < off:
				return -1
			case o.it.First > off:
				return 1
			}
			return 0
		})
		if i == len(list) || !list[i].covers(off) {
			continue
		}
		for i > 0 && list[i-1].covers(off) {
			i--
		}
		for ; i < len(list) && list[i].covers(off); i++ {
			held, err := c.holds(list[i], off)
			if err != nil {
				return nil, err
			}
			if held {
				out = append(out, list[i])
			}
		}
	}
	return out, nil
}

// holds reports whether the object holds a row of offset off (a record
// that went to the error object is not in it).
func (c *coverage) holds(o *object, off uint64) (bool, error) {
	if !o.covers(off) {
		return false, nil
	}
	if o.rows < 0 {
		if err := c.readFooters([]*object{o}); err != nil {
			return false, err
		}
	}
	switch o.rows {
	case 0:
		return false, nil
	case o.span():
		return true, nil
	}
	if !o.offsRead {
		offs, err := c.stores.objectOffsets(o.path)
		if err != nil {
			return false, fmt.Errorf("read the offsets of %s: %w", o.path, err)
		}
		slices.Sort(offs)
		o.offs, o.offsRead = offs, true
	}
	_, found := slices.BinarySearch(o.offs, off)
	return found, nil
}

// readFooters reads the objects' row counts and server times from their
// footers.
func (c *coverage) readFooters(objs []*object) error {
	return forEach(len(objs), func(i int) error {
		o := objs[i]
		n, tLo, tHi, tOK, err := c.stores.footer(o.path)
		if err != nil {
			return fmt.Errorf("read the footer of %s: %w", o.path, err)
		}
		o.rows = n
		o.box.tLo, o.box.tHi, o.box.tOK = tLo, tHi, tOK
		return nil
	})
}

// boxOf reads what a data file's manifest entry says of its rows.
func (c *coverage) boxOf(df iceberg.DataFile) box {
	var b box
	lower, upper, nulls := df.LowerBoundValues(), df.UpperBoundValues(), df.NullValueCounts()
	noNulls := func(field int) bool {
		n, ok := nulls[field]
		return field != 0 && ok && n == 0
	}
	ints := func(field int) (lo, hi int64, ok bool) {
		if !noNulls(field) {
			return 0, 0, false
		}
		lo, ok1 := decodeInt(lower[field])
		hi, ok2 := decodeInt(upper[field])
		return lo, hi, ok1 && ok2 && lo <= hi
	}
	if lo, hi, ok := ints(c.fields.offset); ok && lo >= 0 {
		b.lo, b.hi, b.offOK = uint64(lo), uint64(hi), true
	}
	if c.fields.partition != 0 {
		b.pLo, b.pHi, b.pOK = ints(c.fields.partition)
	} else if len(c.ranges) == 1 {
		for id := range c.ranges {
			b.pLo, b.pHi, b.pOK = int64(id.Partition), int64(id.Partition), true
		}
	}
	b.tLo, b.tHi, b.tOK = ints(c.fields.timestamp)
	if len(c.topics) == 1 {
		for t := range c.topics {
			b.names, b.namesOK = t, true
		}
	} else if noNulls(c.fields.stream) && noNulls(c.fields.topic) {
		// Equal bounds are the value itself: a truncated upper bound is
		// always greater than the lower.
		sl, su := lower[c.fields.stream], upper[c.fields.stream]
		tl, tu := lower[c.fields.topic], upper[c.fields.topic]
		if sl != nil && tl != nil && bytes.Equal(sl, su) && bytes.Equal(tl, tu) {
			b.names, b.namesOK = [2]string{string(sl), string(tl)}, true
		}
	}
	return b
}

// decodeInt reads an int or long bound (Iceberg's single-value
// serialization: little-endian).
func decodeInt(b []byte) (int64, bool) {
	switch len(b) {
	case 8:
		return int64(binary.LittleEndian.Uint64(b)), true
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	}
	return 0, false
}

// prove fills rep's findings: the files of the table against the objects.
func (c *coverage) prove(live []iceberg.DataFile, rep *audit.TableReport) error {
	var rws []*rewritten
	byPath := map[string]*rewritten{}
	seen := map[string]bool{}
	for _, df := range live {
		p := df.FilePath()
		if !seen[p] {
			seen[p] = true
			rep.Files++
		}
		if o := c.byPath[p]; o != nil {
			o.own++
			// The rows and times the table has of it.
			o.rows = df.Count()
			own := c.boxOf(df)
			o.box.tLo, o.box.tHi, o.box.tOK = own.tLo, own.tHi, own.tOK
			continue
		}
		f := byPath[p]
		if f == nil {
			f = &rewritten{df: df}
			byPath[p] = f
			rws = append(rws, f)
		}
		f.times++
	}
	for _, o := range c.objects {
		if o.own > 1 {
			rep.Twice = append(rep.Twice, fmt.Sprintf("%s (%d times)", o.path, o.own))
		}
	}
	// The objects not in the table as their own file: their rows must be
	// in rewritten files (or be none).
	var counted []*object
	for _, o := range c.objects {
		if o.own == 0 {
			counted = append(counted, o)
		}
	}
	if err := c.readFooters(counted); err != nil {
		return err
	}
	// What the bounds say of each rewritten file: the objects it may hold.
	var active []*rewritten // files that may hold archived rows
	for _, f := range rws {
		if f.df.Count() == 0 {
			continue // no rows
		}
		f.box = c.boxOf(f.df)
		for _, o := range c.objects {
			if o.rows != 0 && f.box.meets(o.box) {
				f.objs = append(f.objs, o)
			}
		}
		if c.fields.offset == 0 || len(f.objs) == 0 {
			// No offsets in the table, or none of the objects: no row is
			// an archived one.
			f.foreign = true
			rep.Outside = append(rep.Outside, f.df.FilePath())
			continue
		}
		active = append(active, f)
	}
	// The bounds and counts prove a file where it alone can hold its
	// objects' rows and holds as many rows as they have.
	for _, f := range active {
		f.why = c.unproven(f, active)
		if f.why == "" {
			f.proven = true
			for _, o := range f.objs {
				o.by = f
			}
		}
	}
	var read []*rewritten
	for _, f := range active {
		if !f.proven {
			read = append(read, f)
		}
	}
	return c.count(read, rep)
}

// unproven says why f's bounds and count do not prove it holds its
// objects' rows once ("" when they do).
func (c *coverage) unproven(f *rewritten, active []*rewritten) string {
	switch {
	case !f.box.offOK:
		return "it has no offset bounds"
	case !f.box.pOK || !f.box.namesOK:
		return "its bounds do not say which partitions its rows are of"
	case f.times != 1:
		return fmt.Sprintf("the table has it %d times", f.times)
	}
	var sum int64
	for _, o := range f.objs {
		switch {
		case o.own > 0:
			return "its bounds meet " + o.path + ", in the table as its own file"
		case !f.box.contains(o.box):
			return "its bounds hold part of " + o.path
		}
		sum += o.rows
	}
	for _, g := range active {
		if g != f && g.box.meets(f.box) {
			return "its bounds meet " + g.df.FilePath() + "'s"
		}
	}
	if sum != f.df.Count() {
		return fmt.Sprintf("it has %d rows, the objects its bounds hold %d", f.df.Count(), sum)
	}
	return ""
}

// hit is one row of a read file.
type hit struct {
	off  uint64
	file int // index in the read files
}

// count reads the rows of the files the bounds could not decide and
// counts every offset they hold against the objects holding it.
func (c *coverage) count(read []*rewritten, rep *audit.TableReport) error {
	hits := map[PartitionID][]hit{}
	type foreignRows struct {
		unkeyed int64
		byID    map[PartitionID][]uint64
		n       int64
	}
	foreign := make([]foreignRows, len(read))
	total := make([]int64, len(read))
	for i, f := range read {
		c.r.Log.Info("iceberg table check: reading a data file's offsets, as its bounds cannot decide", "table", c.tbl.Identifier(), "file", f.df.FilePath(), "rows", f.df.Count(), "why", f.why)
		foreign[i].byID = map[PartitionID][]uint64{}
		err := c.stores.tableRows(f.df, c.topics, func(id PartitionID, off uint64, keyed bool) {
			for range f.times {
				total[i]++
				switch _, registered := c.ranges[id]; {
				case !keyed:
					foreign[i].unkeyed++
					foreign[i].n++
				case !registered:
					foreign[i].byID[id] = append(foreign[i].byID[id], off)
					foreign[i].n++
				default:
					hits[id] = append(hits[id], hit{off, i})
				}
			}
		})
		if err != nil {
			return fmt.Errorf("read the rows of %s: %w", f.df.FilePath(), err)
		}
	}
	missing, doubled := newRuns(), newRuns()
	for _, id := range slices.SortedFunc(mapKeys(c.ranges), cmpID) {
		hs := hits[id]
		slices.SortFunc(hs, func(a, b hit) int { return cmp.Or(cmp.Compare(a.off, b.off), cmp.Compare(a.file, b.file)) })
		// The offsets to weigh: every row read, and every offset of an
		// object that no file proves and whose range some row meets; an
		// object whose range no row meets is missing whole.
		offs := map[uint64]bool{}
		for _, h := range hs {
			offs[h.off] = true
		}
		for _, list := range c.generations(id) {
			for _, o := range list {
				if o.own > 0 || o.by != nil {
					continue
				}
				if o.rows == 0 {
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s (partition %s, offsets %d..%d) has no rows (every record went to the error object) and is not in the table as a file: nothing is missing", o.path, id, o.it.First, o.it.Last))
					continue
				}
				i, _ := slices.BinarySearchFunc(hs, o.it.First, func(h hit, off uint64) int { return cmp.Compare(h.off, off) })
				if i == len(hs) || hs[i].off > o.it.Last {
					missing.whole(o.path, fmt.Sprintf("%s (partition %s, offsets %d..%d)", o.path, id, o.it.First, o.it.Last))
					continue
				}
				for off := o.it.First; off <= o.it.Last; off++ {
					held, err := c.holds(o, off)
					if err != nil {
						return err
					}
					if held {
						offs[off] = true
					}
				}
			}
		}
		for _, off := range slices.Sorted(mapKeys(offs)) {
			lo, _ := slices.BinarySearchFunc(hs, off, func(h hit, off uint64) int { return cmp.Compare(h.off, off) })
			hi := lo
			for hi < len(hs) && hs[hi].off == off {
				hi++
			}
			holders, err := c.holders(id, off)
			if err != nil {
				return err
			}
			have, want := hi-lo, len(holders)
			var in []string
			for _, h := range hs[lo:hi] {
				in = append(in, read[h.file].df.FilePath())
			}
			for _, o := range holders {
				switch {
				case o.own > 0:
					have++
					in = append(in, o.path)
				case o.by != nil:
					have++
					in = append(in, o.by.df.FilePath())
				}
			}
			switch {
			case want == 0:
				for _, h := range hs[lo:hi] {
					foreign[h.file].byID[id] = append(foreign[h.file].byID[id], off)
					foreign[h.file].n++
				}
			case have < want:
				// Rows carry no generation: when objects of several
				// generations hold the offset and none is a file of the
				// table, the rows read cannot say whose are missing.
				var unproven []*object
				for _, o := range holders {
					if o.own == 0 && o.by == nil {
						unproven = append(unproven, o)
					}
				}
				if len(unproven) == 1 {
					o := unproven[0]
					missing.add(o.path, off, func(offs string) string {
						return fmt.Sprintf("%s (partition %s, offsets %s of its %d..%d)", o.path, id, offs, o.it.First, o.it.Last)
					})
					break
				}
				var paths []string
				for _, o := range unproven {
					paths = append(paths, o.path)
				}
				candidates := strings.Join(paths, ", ")
				short := want - have
				missing.add(id.String()+" "+strconv.Itoa(short)+" "+candidates, off, func(offs string) string {
					return fmt.Sprintf("partition %s, offsets %s: %d of %d copies in the table, the rest of one or more of %s", id, offs, have, want, candidates)
				})
			case have > want:
				where := timesIn(in)
				doubled.add(id.String()+" "+strconv.Itoa(have)+" "+where, off, func(offs string) string {
					return fmt.Sprintf("partition %s, offsets %s: %d times, in %s", id, offs, have, where)
				})
			}
		}
	}
	rep.Missing = append(rep.Missing, missing.rendered()...)
	rep.Twice = append(rep.Twice, doubled.rendered()...)
	for i, f := range read {
		fr := foreign[i]
		if fr.n == 0 {
			continue
		}
		if fr.n == total[i] {
			rep.Outside = append(rep.Outside, f.df.FilePath())
			continue
		}
		for _, id := range slices.SortedFunc(mapKeys(fr.byID), cmpID) {
			offs := fr.byID[id]
			slices.Sort(offs)
			rep.Outside = append(rep.Outside, fmt.Sprintf("%s (partition %s, offsets %s: no archived offset in a registered range)", f.df.FilePath(), id, offRanges(offs)))
		}
		if fr.unkeyed > 0 {
			rep.Outside = append(rep.Outside, fmt.Sprintf("%s (%d rows without a partition and offset of the table's partitions)", f.df.FilePath(), fr.unkeyed))
		}
	}
	return nil
}

// timesIn renders the files an offset is in: each once, with how many
// times when more.
func timesIn(paths []string) string {
	n := map[string]int{}
	var order []string
	for _, p := range paths {
		if n[p] == 0 {
			order = append(order, p)
		}
		n[p]++
	}
	slices.Sort(order)
	out := make([]string, len(order))
	for i, p := range order {
		out[i] = p
		if n[p] > 1 {
			out[i] = fmt.Sprintf("%s (%d times)", p, n[p])
		}
	}
	return strings.Join(out, ", ")
}

// runs collects findings by key, each with its offsets, in first-seen
// order; a finding is rendered with its offsets as ranges.
type runs struct {
	order  []string
	render map[string]func(offs string) string
	offs   map[string][]uint64
}

func newRuns() *runs {
	return &runs{render: map[string]func(string) string{}, offs: map[string][]uint64{}}
}

// add records off under key.
func (r *runs) add(key string, off uint64, render func(offs string) string) {
	if _, ok := r.render[key]; !ok {
		r.order = append(r.order, key)
		r.render[key] = render
	}
	r.offs[key] = append(r.offs[key], off)
}

// whole records a finding without offsets.
func (r *runs) whole(key, finding string) {
	r.add(key, 0, func(string) string { return finding })
}

func (r *runs) rendered() []string {
	var out []string
	for _, k := range r.order {
		out = append(out, r.render[k](offRanges(r.offs[k])))
	}
	return out
}

// offRanges renders sorted offsets as ranges: "3, 5..9".
func offRanges(offs []uint64) string {
	var b strings.Builder
	for i := 0; i < len(offs); {
		j := i
		for j+1 < len(offs) && offs[j+1] <= offs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if offs[i] == offs[j] {
			fmt.Fprintf(&b, "%d", offs[i])
		} else {
			fmt.Fprintf(&b, "%d..%d", offs[i], offs[j])
		}
		i = j + 1
	}
	return b.String()
}

func mapKeys[K comparable, V any](m map[K]V) func(yield func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// storeIO reads files where they are: the table's with the table's IO,
// others (the archive's objects, files in another bucket) with an IO of
// the sink's file properties, one per bucket.
type storeIO struct {
	ctx   context.Context
	props iceberg.Properties
	root  string
	tbl   *table.Table

	mu     sync.Mutex
	home   iceio.IO // the table's
	others map[string]iceio.IO
	reader *table.Table // tbl reading through this storeIO
}

func storeRoot(path string) string {
	u, err := url.Parse(path)
	if err != nil || u.Scheme == "" {
		return "file://"
	}
	return u.Scheme + "://" + u.Host
}

// fs is the IO for path: the table's for its own store when table is
// set, else one of the sink's file properties.
func (s *storeIO) fs(path string, table bool) (iceio.IO, error) {
	root := storeRoot(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if table && root == s.root {
		if s.home == nil {
			home, err := s.tbl.FS(s.ctx)
			if err != nil {
				return nil, err
			}
			s.home = home
		}
		return s.home, nil
	}
	if fs, ok := s.others[root]; ok {
		return fs, nil
	}
	fs, err := iceio.LoadFS(s.ctx, s.props, path)
	if err != nil {
		return nil, fmt.Errorf("open the store of %s: %w", path, err)
	}
	s.others[root] = fs
	return fs, nil
}

// footer reads an archived object's row count, and the range of its
// timestamp column from its row groups' statistics (ok false when it has
// none).
func (s *storeIO) footer(path string) (rows, tLo, tHi int64, tOK bool, err error) {
	fs, err := s.fs(path, false)
	if err != nil {
		return 0, 0, 0, false, err
	}
	f, err := fs.Open(path)
	if err != nil {
		return 0, 0, 0, false, err
	}
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return 0, 0, 0, false, err
	}
	defer rdr.Close()
	meta := rdr.MetaData()
	col := meta.Schema.ColumnIndexByName(TimestampColumn)
	tOK = col >= 0 && meta.NumRowGroups() > 0
	for i := 0; tOK && i < meta.NumRowGroups(); i++ {
		cc, err := meta.RowGroup(i).ColumnChunk(col)
		if err != nil {
			return 0, 0, 0, false, err
		}
		st, err := cc.Statistics()
		i64, ok := st.(*metadata.Int64Statistics)
		if err != nil || !ok || !i64.HasMinMax() || i64.NullCount() > 0 {
			tOK = false
			break
		}
		if i == 0 || i64.Min() < tLo {
			tLo = i64.Min()
		}
		if i == 0 || i64.Max() > tHi {
			tHi = i64.Max()
		}
	}
	return rdr.NumRows(), tLo, tHi, tOK, nil
}

// objectOffsets reads the offset column of an archived object.
func (s *storeIO) objectOffsets(path string) ([]uint64, error) {
	fs, err := s.fs(path, false)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	defer rdr.Close()
	col := rdr.MetaData().Schema.ColumnIndexByName(colOffset)
	if col < 0 {
		return nil, fmt.Errorf("no %s column", colOffset)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(s.ctx, []int{col}, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []uint64
	for rr.Next() {
		rec := rr.RecordBatch()
		get := intsOf(rec.Column(0))
		for i := range int(rec.NumRows()) {
			if v, ok := get(i); ok && v >= 0 {
				out = append(out, uint64(v))
			}
		}
	}
	return out, rr.Err()
}

// tableRows reads a data file of the table as the table's readers do
// (field ids, else the name mapping), its key columns only, and calls fn
// for every row: its partition and offset, keyed false for a row without
// them (a null, or columns the file lacks).
func (s *storeIO) tableRows(df iceberg.DataFile, topics map[[2]string]bool, fn func(id PartitionID, off uint64, keyed bool)) error {
	s.mu.Lock()
	if s.reader == nil {
		s.reader = table.New(s.tbl.Identifier(), s.tbl.Metadata(), s.tbl.MetadataLocation(),
			func(context.Context) (iceio.IO, error) { return readerIO{s}, nil }, nil)
	}
	rdr := s.reader
	s.mu.Unlock()
	sc := rdr.Schema()
	var cols []string
	for _, name := range []string{colStream, colTopic, colPartition, colOffset} {
		if _, ok := sc.FindFieldByName(name); ok {
			cols = append(cols, name)
		}
	}
	var single [2]string
	for t := range topics {
		single = t
	}
	_, records, err := rdr.Scan(table.WithSelectedFields(cols...)).ReadTasks(s.ctx, []table.FileScanTask{{File: df, Length: df.FileSizeBytes()}})
	if err != nil {
		return err
	}
	for rec, err := range records {
		if err != nil {
			return err
		}
		str := func(name string) func(int) (string, bool) {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				return func(int) (string, bool) { return "", false }
			}
			a := rec.Column(idx[0])
			sv, ok := a.(interface{ Value(int) string })
			if !ok {
				return func(int) (string, bool) { return "", false }
			}
			return func(i int) (string, bool) { return sv.Value(i), a.IsValid(i) }
		}
		num := func(name string) func(int) (int64, bool) {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				return func(int) (int64, bool) { return 0, false }
			}
			return intsOf(rec.Column(idx[0]))
		}
		stream, topic, partition, offset := str(colStream), str(colTopic), num(colPartition), num(colOffset)
		for i := range int(rec.NumRows()) {
			id := PartitionID{Stream: single[0], Topic: single[1]}
			keyed := true
			if len(topics) != 1 {
				var ok1, ok2 bool
				id.Stream, ok1 = stream(i)
				id.Topic, ok2 = topic(i)
				keyed = ok1 && ok2
			}
			p, okp := partition(i)
			off, oko := offset(i)
			keyed = keyed && okp && oko && p >= 0 && p <= 1<<32-1 && off >= 0
			id.Partition = uint32(p)
			fn(id, uint64(off), keyed)
		}
		rec.Release()
	}
	return nil
}

// readerIO is storeIO as an iceberg IO: the table's files with the
// table's IO, others with the sink's.
type readerIO struct{ s *storeIO }

func (r readerIO) Open(name string) (iceio.File, error) {
	fs, err := r.s.fs(name, true)
	if err != nil {
		return nil, err
	}
	return fs.Open(name)
}

func (r readerIO) Remove(name string) error {
	return fmt.Errorf("icetable: the table check removes nothing (%s)", name)
}

// intsOf reads an integer column of any width.
func intsOf(a arrow.Array) func(int) (int64, bool) {
	switch a := a.(type) {
	case *array.Int64:
		return func(i int) (int64, bool) { return a.Value(i), a.IsValid(i) }
	case *array.Uint64:
		return func(i int) (int64, bool) {
			v := a.Value(i)
			return int64(v), a.IsValid(i) && v <= 1<<63-1
		}
	case *array.Int32:
		return func(i int) (int64, bool) { return int64(a.Value(i)), a.IsValid(i) }
	case *array.Uint32:
		return func(i int) (int64, bool) { return int64(a.Value(i)), a.IsValid(i) }
	}
	return func(int) (int64, bool) { return 0, false }
}

// misplaced lists the data files whose rows do not all hold, by the
// file's own bounds of the column, the value of the partition they are
// registered in, for each payload field the table is partitioned by
// (identity fields of Values): a unit's value objects each hold one value,
// so each lies in exactly one partition. A file whose bounds cannot say
// (none for the column) is not listed: Check holds offsets, not values.
func (r *Registrar) misplaced(tbl *table.Table, live []iceberg.DataFile) []string {
	sc := tbl.Schema()
	var out []string
	for _, df := range live {
		spec := tbl.Metadata().PartitionSpecByID(int(df.SpecID()))
		if spec == nil {
			continue
		}
		for f, pf := range valuePartitionFields(sc, *spec, r.Values) {
			if why := misplacedValue(df, f, pf); why != "" {
				out = append(out, fmt.Sprintf("%s: %s", df.FilePath(), why))
			}
		}
	}
	return out
}

// misplacedValue says how df's rows leave its partition's value of pf,
// a partition field on column f ("" when they do not, or cannot say).
func misplacedValue(df iceberg.DataFile, f iceberg.NestedField, pf iceberg.PartitionField) string {
	want, has := df.Partition()[pf.FieldID]
	nulls, nullsOK := df.NullValueCounts()[f.ID]
	lower, lok := df.LowerBoundValues()[f.ID]
	upper, uok := df.UpperBoundValues()[f.ID]
	if !has || want == nil {
		if lok && uok && len(lower) == 0 && len(upper) == 0 {
			return "" // the default folder's empty strings (nullForEmpty)
		}
		if lok || uok {
			return fmt.Sprintf("in the partition %s = null, but its %s values range over %q..%q", pf.Name, f.Name, lower, upper)
		}
		return ""
	}
	text, isString := want.(string)
	switch {
	case !isString:
		return "" // only string values are checked by their bounds
	case nullsOK && nulls > 0:
		return fmt.Sprintf("in the partition %s = %q, but %d of its rows have no %s", pf.Name, text, nulls, f.Name)
	case !lok || !uok:
		return ""
	case utf8.RuneCountInString(text) > boundRunes:
		// Bounds of a long string are cut (the upper one raised): the
		// lower is a prefix of the value.
		if !strings.HasPrefix(text, string(lower)) {
			return fmt.Sprintf("in the partition %s = %q, but its %s values start at %q", pf.Name, text, f.Name, lower)
		}
	case string(lower) != text || string(upper) != text:
		return fmt.Sprintf("in the partition %s = %q, but its %s values range over %q..%q", pf.Name, text, f.Name, lower, upper)
	}
	return ""
}

// boundRunes is how many characters of a string Iceberg's default
// metrics (truncate(16)) keep in its bounds.
const boundRunes = 16

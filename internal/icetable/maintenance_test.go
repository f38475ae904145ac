package icetable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/icemaint"
)

// topicLake archives and registers the partitions of one topic (its own
// table, app_<topic>) in a kindLake, so that the cases of a test share the
// lake's servers.
type topicLake struct {
	*kindLake
	topic string
	// reads are the files the last audit read the offsets of (its log).
	reads []string
	// hourly: the table is partitioned by hour(timestamp); partition 0's
	// offsets are an hour later every ten, partition 1's 10..19 two hours
	// after its 0..9 (so that files of two hours meet in their offsets and
	// partitions, and only their times part them).
	hourly bool
}

func (l *topicLake) reg() *icetable.Registrar {
	r := l.registrar(l.cat)
	if l.hourly {
		r.Partition = "hour"
	}
	return r
}

func (l *topicLake) ts(p uint32, off uint64) uint64 {
	hour := uint64(0)
	switch {
	case !l.hourly:
	case p == 1 && off >= 10:
		hour = 2
	default:
		hour = off / 10
	}
	return 1_700_000_000_000_000 + hour*3600_000_000 + off
}

func (l *topicLake) id(p uint32) icetable.PartitionID {
	return icetable.PartitionID{Stream: "app", Topic: l.topic, Partition: p}
}

func (l *topicLake) ident() table.Identifier { return table.Identifier{"iggy", "app_" + l.topic} }

// archive writes partition p's object of offsets first..last, in which the
// offsets rejected names went to the error object (they are not rows), and
// lists it for the Backlog.
func (l *topicLake) archive(t *testing.T, p uint32, first, last uint64, rejected func(off uint64) bool) icetable.Item {
	t.Helper()
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, IncludeMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	kept := func(off uint64) bool { return rejected == nil || !rejected(off) }
	var out bytes.Buffer
	enc.Reset(parquet.Source{Stream: "app", Topic: l.topic, Partition: p})
	for off := first; off <= last; off++ {
		if kept(off) {
			enc.Observe(payload(p, off, false))
		}
	}
	if err := enc.Begin(&out); err != nil {
		t.Fatal(err)
	}
	for off := first; off <= last; off++ {
		if kept(off) {
			if err := enc.Write(&parquet.Record{Offset: off, Timestamp: l.ts(p, off), Payload: payload(p, off, false)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	key := l.names.Partition("app", l.topic, p).Object(first, last, 0)
	l.putKey(t, key, out.Bytes())
	it := icetable.Item{Key: key, First: first, Last: last, Data: true}
	l.mu.Lock()
	l.objects[l.id(p)] = append(l.objects[l.id(p)], it)
	l.mu.Unlock()
	return it
}

func (l *topicLake) putKey(t *testing.T, key string, body []byte) {
	t.Helper()
	if _, err := l.s3.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

// register registers every partition up to through, listing the archive.
func (l *topicLake) register(t *testing.T, through uint64, partitions ...uint32) icetable.Result {
	t.Helper()
	targets := map[icetable.PartitionID]icetable.Target{}
	for _, p := range partitions {
		targets[l.id(p)] = icetable.Target{Through: icetable.Position{Last: through}}
	}
	res, err := l.reg().Register(context.Background(), targets)
	if err != nil {
		t.Fatalf("register through %d: %v", through, err)
	}
	return res
}

// audit runs the table check of the partitions.
func (l *topicLake) audit(t *testing.T, partitions ...uint32) audit.TableReport {
	t.Helper()
	var ids []icetable.PartitionID
	for _, p := range partitions {
		ids = append(ids, l.id(p))
	}
	r := l.reg()
	var log bytes.Buffer
	r.Log = slog.New(slog.NewJSONHandler(&log, nil))
	reps, err := r.Check(context.Background(), ids, nil)
	if err != nil || len(reps) != 1 {
		t.Fatalf("check: %+v, %v", reps, err)
	}
	l.reads = nil
	for _, line := range strings.Split(log.String(), "\n") {
		var e struct{ Msg, File, Why string }
		if json.Unmarshal([]byte(line), &e) == nil && strings.Contains(e.Msg, "reading a data file's offsets") {
			l.reads = append(l.reads, e.File+": "+e.Why)
		}
	}
	return reps[0]
}

func (l *topicLake) compact(t *testing.T, opts ...icemaint.CompactOption) icemaint.Compacted {
	t.Helper()
	res, err := icemaint.Compact(context.Background(), l.cat, l.ident(), append(opts, icemaint.FileProps(l.files().Props()))...)
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	return res
}

// rejectedRows are the offsets the standard archive sends to the error
// object (see standard).
func (l *topicLake) rejectedRows() map[[2]int64]bool {
	out := map[[2]int64]bool{{0, 15}: true}
	for off := int64(20); off <= 24; off++ {
		out[[2]int64{0, off}] = true
	}
	return out
}

// standard archives and registers two partitions: partition 0 in four
// objects (0..9; 10..19 whose offset 15 went to the error object; 20..24
// whose every record did, no rows; 25..29), partition 1 in two.
func (l *topicLake) standard(t *testing.T) {
	t.Helper()
	l.archive(t, 0, 0, 9, nil)
	l.archive(t, 0, 10, 19, func(off uint64) bool { return off == 15 })
	l.archive(t, 0, 20, 24, func(uint64) bool { return true })
	l.archive(t, 0, 25, 29, nil)
	l.archive(t, 1, 0, 9, nil)
	l.archive(t, 1, 10, 19, nil)
	l.register(t, 29, 0)
	l.register(t, 19, 1)
	if rep := l.audit(t, 0, 1); !rep.OK() {
		t.Fatalf("the table audits unclean before any maintenance: %+v", rep)
	}
}

// onlyPartition selects the archive's objects of partition p.
func onlyPartition(l *topicLake, p uint32) icemaint.CompactOption {
	paths := map[string]bool{}
	l.mu.Lock()
	for _, it := range l.objects[l.id(p)] {
		paths["s3://"+bucket+"/"+it.Key] = true
	}
	l.mu.Unlock()
	return icemaint.Only(func(df iceberg.DataFile) bool { return paths[df.FilePath()] })
}

func contains(list []string, parts ...string) bool {
	for _, s := range list {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(s, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestCompactedTableAudits (issue 42, 3): the table audit after the
// maintenance an engine does. A compaction (rows of several objects in one
// new file, the objects' files replaced in one snapshot) audits clean,
// whether the bounds prove the file (one partition's objects) or its rows
// are read (both partitions in one file); a compaction that drops rows
// names the offsets missing and their object; one that writes rows twice,
// or a compacted file added twice, names the offsets doubled and the
// files; a foreign file, alone or compacted with archived rows, is outside
// (its foreign rows only). Every case runs on the Hadoop catalog in
// process, Apache Iceberg's REST catalog and Glue (moto).
func TestCompactedTableAudits(t *testing.T) {
	type tcase struct {
		name string
		run  func(t *testing.T, l *topicLake)
	}
	cases := []tcase{
		{"compact one partition", func(t *testing.T, l *topicLake) {
			res := l.compact(t, onlyPartition(l, 0))
			if len(res.Added) != 1 || len(res.Removed) < 3 {
				t.Fatalf("compaction: %d files added, %d removed", len(res.Added), len(res.Removed))
			}
			rep := l.audit(t, 0, 1)
			if !rep.OK() || rep.Files != 3 && rep.Files != 4 { // the empty object's file may stay
				t.Fatalf("after a compaction of partition 0: %+v", rep)
			}
			if len(l.reads) != 0 {
				t.Errorf("the audit read rows where the bounds decide: %q", l.reads)
			}
		}},
		{"compact everything", func(t *testing.T, l *topicLake) {
			res := l.compact(t)
			if len(res.Added) != 1 {
				t.Fatalf("compaction: %d files added", len(res.Added))
			}
			rep := l.audit(t, 0, 1)
			if !rep.OK() || rep.Files != 1 && rep.Files != 2 { // the empty object's file may stay
				t.Fatalf("after a compaction of both partitions: %+v", rep)
			}
			if len(l.reads) != 0 {
				t.Errorf("the audit read rows where the bounds decide: %q", l.reads)
			}
		}},
		{"hourly table compacted", func(t *testing.T, l *topicLake) {
			tbl, err := l.cat.LoadTable(context.Background(), l.ident())
			if err != nil {
				t.Fatal(err)
			}
			if spec := tbl.Spec(); spec.NumFields() != 1 {
				t.Fatalf("the table's spec is %v, want hour(timestamp)", spec)
			}
			res := l.compact(t)
			if len(res.Added) != 3 {
				t.Fatalf("compaction: %d files added, want one per hour", len(res.Added))
			}
			rep := l.audit(t, 0, 1)
			if !rep.OK() {
				t.Fatalf("after a compaction of an hourly table: %+v", rep)
			}
			if len(l.reads) != 0 {
				t.Errorf("the audit read rows where the bounds decide: %q", l.reads)
			}
		}},
		{"compact objects apart", func(t *testing.T, l *topicLake) {
			// Objects 0..9 and 25..29 in one file: its bounds meet 10..19,
			// which is in the table as its own file, so its rows are read.
			apart := map[string]bool{}
			for _, it := range []icetable.Item{l.objects[l.id(0)][0], l.objects[l.id(0)][3]} {
				apart["s3://"+bucket+"/"+it.Key] = true
			}
			res := l.compact(t, icemaint.Only(func(df iceberg.DataFile) bool { return apart[df.FilePath()] }))
			rep := l.audit(t, 0, 1)
			if !rep.OK() {
				t.Fatalf("after a compaction of objects 0..9 and 25..29: %+v", rep)
			}
			if len(l.reads) != 1 || !strings.Contains(l.reads[0], res.Added[0].FilePath()) || !strings.Contains(l.reads[0], "in the table as its own file") {
				t.Errorf("the audit read %q, want the compacted file, whose bounds meet an object's own file", l.reads)
			}
		}},
		{"compaction drops rows", func(t *testing.T, l *topicLake) {
			l.compact(t, onlyPartition(l, 0), icemaint.RowCopies(func(p, off int64) int {
				if off == 3 || off == 4 || off == 27 {
					return 0
				}
				return 1
			}))
			rep := l.audit(t, 0, 1)
			if len(rep.Missing) != 2 || !contains(rep.Missing, l.names.Partition("app", l.topic, 0).Object(0, 9, 0), "offsets 3..4 of its 0..9") ||
				!contains(rep.Missing, l.names.Partition("app", l.topic, 0).Object(25, 29, 0), "offsets 27 of its 25..29") || len(rep.Twice)+len(rep.Outside) != 0 {
				t.Fatalf("after a compaction that dropped offsets 3, 4 and 27: %+v", rep)
			}
		}},
		{"compaction doubles rows", func(t *testing.T, l *topicLake) {
			res := l.compact(t, icemaint.RowCopies(func(p, off int64) int {
				if p == 1 && (off == 12 || off == 13) {
					return 2
				}
				return 1
			}))
			rep := l.audit(t, 0, 1)
			if len(rep.Twice) != 1 || !contains(rep.Twice, "partition app/"+l.topic+"/1, offsets 12..13: 2 times", res.Added[0].FilePath()) || len(rep.Missing)+len(rep.Outside) != 0 {
				t.Fatalf("after a compaction that wrote offsets 12..13 twice: %+v", rep)
			}
		}},
		{"compacted file added twice", func(t *testing.T, l *topicLake) {
			res := l.compact(t, onlyPartition(l, 1))
			if err := l.operateOn(l.ident(), func(_ *table.Table, tx *table.Transaction) error {
				return tx.AddDataFiles(context.Background(), res.Added, nil, table.WithoutDuplicateCheck())
			}); err != nil {
				t.Fatal(err)
			}
			rep := l.audit(t, 0, 1)
			if len(rep.Twice) != 1 || !contains(rep.Twice, "partition app/"+l.topic+"/1, offsets 0..19: 2 times", res.Added[0].FilePath()+" (2 times)") || len(rep.Missing)+len(rep.Outside) != 0 {
				t.Fatalf("after the compacted file was added again: %+v", rep)
			}
		}},
		{"foreign file", func(t *testing.T, l *topicLake) {
			foreign := l.foreign(t, 7, 0, 9)
			beyond := l.foreign(t, 1, 40, 49)
			l.addFiles(t, foreign, beyond)
			rep := l.audit(t, 0, 1)
			if len(rep.Outside) != 2 || !contains(rep.Outside, foreign) || !contains(rep.Outside, beyond) || len(rep.Missing)+len(rep.Twice) != 0 {
				t.Fatalf("after foreign files were added: %+v", rep)
			}
			// Compacted with archived rows, only its rows are outside.
			res := l.compact(t, icemaint.Only(func(df iceberg.DataFile) bool { return df.FilePath() != foreign }))
			rep = l.audit(t, 0, 1)
			if len(rep.Outside) != 2 || !contains(rep.Outside, foreign) || !contains(rep.Outside, res.Added[0].FilePath(), "partition app/"+l.topic+"/1, offsets 40..49: no archived offset") || len(rep.Missing)+len(rep.Twice) != 0 {
				t.Fatalf("after a compaction of a foreign file with archived rows: %+v", rep)
			}
		}},
		{"stray copy of an object", func(t *testing.T, l *topicLake) {
			a := l.names.Partition("app", l.topic, 0).Object(0, 9, 0)
			stray := "copies/" + a
			body, err := l.s3.Client(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(a)})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.ReadFrom(body.Body)
			body.Body.Close()
			l.putKey(t, stray, b.Bytes())
			l.addFiles(t, "s3://"+bucket+"/"+stray)
			rep := l.audit(t, 0, 1)
			if len(rep.Twice) != 1 || !contains(rep.Twice, "partition app/"+l.topic+"/0, offsets 0..9: 2 times", stray, a) || len(rep.Missing)+len(rep.Outside) != 0 {
				t.Fatalf("after a copy of an object was added: %+v", rep)
			}
		}},
	}
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			base := newKindLake(t, kind)
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					l := &topicLake{kindLake: base, topic: fmt.Sprintf("t%d", i), hourly: strings.HasPrefix(c.name, "hourly")}
					l.standard(t)
					c.run(t, l)
				})
			}
		})
	}
}

// foreign writes a Parquet file of partition p's offsets first..last
// outside the archive's keys and returns its path.
func (l *topicLake) foreign(t *testing.T, p uint32, first, last uint64) string {
	t.Helper()
	key := fmt.Sprintf("foreign/%s-%d-%d-%d.parquet", l.topic, p, first, last)
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, IncludeMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc.Reset(parquet.Source{Stream: "app", Topic: l.topic, Partition: p})
	for off := first; off <= last; off++ {
		enc.Observe(payload(p, off, false))
	}
	if err := enc.Begin(&out); err != nil {
		t.Fatal(err)
	}
	for off := first; off <= last; off++ {
		if err := enc.Write(&parquet.Record{Offset: off, Timestamp: 1_700_000_000_000_000 + off, Payload: payload(p, off, false)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	l.putKey(t, key, out.Bytes())
	return "s3://" + bucket + "/" + key
}

// addFiles is an operator's append of files in the archive's store, their
// statistics read from their footers (as pyiceberg's add_files).
func (l *topicLake) addFiles(t *testing.T, paths ...string) {
	t.Helper()
	ctx := context.Background()
	if err := l.operateOn(l.ident(), func(tbl *table.Table, tx *table.Transaction) error {
		var dfs []iceberg.DataFile
		for _, p := range paths {
			fs, err := iceio.LoadFS(ctx, l.files().Props(), p)
			if err != nil {
				return err
			}
			df, err := table.FileToDataFile(ctx, fs, p, tbl.Schema(), tbl.Spec(), 0, tbl.Properties())
			if err != nil {
				return err
			}
			dfs = append(dfs, df)
		}
		return tx.AddDataFiles(ctx, dfs, nil)
	}); err != nil {
		t.Fatal(err)
	}
}

func (l *kindLake) operateOn(ident table.Identifier, act func(tbl *table.Table, tx *table.Transaction) error) error {
	tbl, err := l.cat.LoadTable(context.Background(), ident)
	if err != nil {
		return err
	}
	tx := tbl.NewTransaction()
	if err := act(tbl, tx); err != nil {
		return err
	}
	_, err = tx.Commit(context.Background())
	return err
}

// TestRegisteringGoesOnAfterACompaction: archive, register, compact,
// archive more, register: the audit is clean and a scan holds every
// offset once; a second compaction over the old compacted file and the new
// objects too.
func TestRegisteringGoesOnAfterACompaction(t *testing.T) {
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			l := &topicLake{kindLake: newKindLake(t, kind), topic: "logs2"}
			l.standard(t)
			l.compact(t)
			l.archive(t, 0, 30, 39, nil)
			l.archive(t, 0, 40, 49, func(off uint64) bool { return off == 41 })
			l.archive(t, 1, 20, 29, nil)
			if res := l.register(t, 49, 0); res.Files != 2 {
				t.Fatalf("registered %d files after the compaction, want 2", res.Files)
			}
			if res := l.register(t, 29, 1); res.Files != 1 {
				t.Fatalf("registered %d files of partition 1, want 1", res.Files)
			}
			if res := l.register(t, 49, 0); res.Commits != 0 {
				t.Fatalf("a run with nothing new committed: %+v", res)
			}
			if rep := l.audit(t, 0, 1); !rep.OK() {
				t.Fatalf("audit after registering past a compaction: %+v", rep)
			}
			delete41 := l.rejectedRows()
			delete41[[2]int64{0, 41}] = true
			l.offsetsOnceWithout(t, delete41)
			l.compact(t)
			if rep := l.audit(t, 0, 1); !rep.OK() {
				t.Fatalf("audit after a second compaction: %+v", rep)
			}
			l.offsetsOnceWithout(t, delete41)
		})
	}
}

// offsetsOnceWithout checks, by a scan of the table, that it holds every
// archived offset but the rejected ones (which went to the error object)
// once, and no other row.
func (l *topicLake) offsetsOnceWithout(t *testing.T, rejected map[[2]int64]bool) {
	t.Helper()
	got, err := icemaint.Offsets(context.Background(), l.cat, l.ident(), l.files().Props())
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]int64]int{}
	l.mu.Lock()
	for id, items := range l.objects {
		if id.Topic != l.topic {
			continue
		}
		for _, it := range items {
			for off := it.First; off <= it.Last; off++ {
				if k := [2]int64{int64(id.Partition), int64(off)}; !rejected[k] {
					want[k] = 1
				}
			}
		}
	}
	l.mu.Unlock()
	for k, n := range got {
		if want[k] != n {
			t.Errorf("partition %d offset %d is in the table %d times, want %d", k[0], k[1], n, want[k])
		}
	}
	for k := range want {
		if got[k] == 0 {
			t.Errorf("partition %d offset %d is not in the table", k[0], k[1])
		}
	}
}

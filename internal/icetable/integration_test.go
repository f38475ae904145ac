package icetable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

const bucket = "archive"

// lake is a REST catalog over versitygw, the data objects in its bucket.
type lake struct {
	s3    *testenv.S3
	rest  *testenv.IcebergREST
	names *keys.Namer
	// objects are every partition's items, as a listing would find them.
	mu      sync.Mutex
	objects map[icetable.PartitionID][]icetable.Item
}

func newLake(t *testing.T) *lake {
	t.Helper()
	testenv.PyIceberg(t) // the reader, checked before anything starts
	s := testenv.StartVersity(t)
	s.CreateBucket(t, bucket)
	r := testenv.StartIcebergREST(t, s, "s3://"+bucket+"/_iceberg")
	tmpl, err := keys.ParseTemplate("{stream}/{topic}")
	if err != nil {
		t.Fatal(err)
	}
	return &lake{s3: s, rest: r, names: keys.NewNamer("", tmpl, "parquet"), objects: map[icetable.PartitionID][]icetable.Item{}}
}

// payload is message off of partition p; extra adds a column only some
// files have (the table's schema must widen to it).
func payload(p uint32, off uint64, extra bool) []byte {
	if extra {
		return fmt.Appendf(nil, `{"k":"%d-%d","n":%d,"more":"x%d"}`, p, off, off, off)
	}
	return fmt.Appendf(nil, `{"k":"%d-%d","n":%d}`, p, off, off)
}

// archive writes one Parquet object of offsets first..last of partition p
// and returns its item.
func (l *lake) archive(t *testing.T, p uint32, first, last uint64, extra bool) icetable.Item {
	t.Helper()
	return l.archiveAt(t, p, first, last, extra, func(off uint64) uint64 { return 1_700_000_000_000_000 + off })
}

// archiveAt is archive with the messages' server times (µs) given by ts.
func (l *lake) archiveAt(t *testing.T, p uint32, first, last uint64, extra bool, ts func(off uint64) uint64) icetable.Item {
	t.Helper()
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, IncludeMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc.Reset(parquet.Source{Stream: "app", Topic: "logs", Partition: p})
	for off := first; off <= last; off++ {
		enc.Observe(payload(p, off, extra))
	}
	if err := enc.Begin(&out); err != nil {
		t.Fatal(err)
	}
	for off := first; off <= last; off++ {
		if err := enc.Write(&parquet.Record{Offset: off, Timestamp: ts(off), Payload: payload(p, off, extra)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return l.put(t, p, first, last, out.Bytes())
}

// put archives body as partition p's object of first..last and lists it
// (once, when put again) for the Backlog.
func (l *lake) put(t *testing.T, p uint32, first, last uint64, body []byte) icetable.Item {
	t.Helper()
	key := l.names.Partition("app", "logs", p).Object(first, last, 0)
	if _, err := l.s3.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	it := icetable.Item{Key: key, First: first, Last: last, Data: true}
	id := icetable.PartitionID{Stream: "app", Topic: "logs", Partition: p}
	l.mu.Lock()
	if objs := l.objects[id]; len(objs) == 0 || objs[len(objs)-1].Key != key {
		l.objects[id] = append(objs, it)
	}
	l.mu.Unlock()
	return it
}

func (l *lake) catalog(t *testing.T, rt http.RoundTripper) *rest.Catalog {
	t.Helper()
	opts := []rest.Option{rest.WithAdditionalProps(l.files().Props())}
	if rt != nil {
		opts = append(opts, rest.WithCustomTransport(rt))
	}
	c, err := rest.NewCatalog(context.Background(), "test", l.rest.Endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (l *lake) files() icetable.FileStore {
	return icetable.FileStore{Endpoint: l.s3.Endpoint, Region: l.s3.Region, PathStyle: true, AccessKeyID: l.s3.AccessKey, SecretAccessKey: l.s3.SecretKey}
}

func (l *lake) registrar(cat icetable.Catalog) *icetable.Registrar {
	return &icetable.Registrar{
		Catalog:   cat,
		Namespace: "iggy",
		Table:     func(stream, topic string) string { return icetable.TableName("{stream}_{topic}", stream, topic) },
		Path:      func(key string) string { return "s3://" + bucket + "/" + key },
		FileProps: l.files().Props(),
		Backlog: func(_ context.Context, id icetable.PartitionID, _ icetable.Position) ([]icetable.Item, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return append([]icetable.Item(nil), l.objects[id]...), nil
		},
		Attempts:    10,
		CallTimeout: 30 * time.Second,
		Log:         slog.New(slog.DiscardHandler),
	}
}

type scanned struct {
	Error     string            `json:"error"`
	Rows      [][]any           `json:"rows"`
	Props     map[string]string `json:"properties"`
	DataFiles []string          `json:"data_files"`
	Snapshots []struct {
		Summary map[string]string `json:"summary"`
	} `json:"snapshots"`
	Planned        []string `json:"planned_files"`
	FilePartitions []struct {
		Path      string `json:"path"`
		SpecID    int    `json:"spec_id"`
		Partition []any  `json:"partition"`
	} `json:"file_partitions"`
	Spec []struct {
		Name, Transform, Source string
	} `json:"spec"`
}

// read scans the table with pyiceberg, an independent reader; filter is
// an optional row filter in pyiceberg's syntax.
func (l *lake) read(t *testing.T, columns string, filter ...string) scanned {
	t.Helper()
	args := []string{filepath.Join(testenv.RepoRoot(t), "scripts", "iceberg_read.py"),
		"--catalog", "rest", "--uri", l.rest.Endpoint, "--s3-endpoint", l.s3.Endpoint, "--s3-access-key", l.s3.AccessKey,
		"--s3-secret-key", l.s3.SecretKey, "--namespace", "iggy", "--table", "app_logs", "--columns", columns}
	if len(filter) > 0 {
		args = append(args, "--filter", filter[0])
	}
	cmd := exec.Command(testenv.PyIceberg(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	var s scanned
	d := json.NewDecoder(&out)
	d.UseNumber()
	if err := d.Decode(&s); err != nil || s.Error != "" {
		t.Fatalf("pyiceberg: %v %s\n%s", err, s.Error, errb.String())
	}
	return s
}

// checkOnce checks that the table holds offsets 0..last of each partition
// exactly once, with their values, and ranges saying so.
func checkOnce(t *testing.T, s scanned, last map[uint32]uint64) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range s.Rows {
		p, _ := r[0].(json.Number).Int64()
		off, _ := r[1].(json.Number).Int64()
		if k := fmt.Sprint(r[2]); k != fmt.Sprintf("%d-%d", p, off) {
			t.Fatalf("row (%d, %d) holds k %q", p, off, k)
		}
		if n := fmt.Sprint(r[3]); n != fmt.Sprint(off) {
			t.Fatalf("row (%d, %d) holds n %s", p, off, n)
		}
		seen[fmt.Sprintf("%d/%d", p, off)]++
	}
	want := 0
	for p, l := range last {
		for off := uint64(0); off <= l; off++ {
			if c := seen[fmt.Sprintf("%d/%d", p, off)]; c != 1 {
				t.Fatalf("partition %d offset %d is in the table %d times", p, off, c)
			}
			want++
		}
	}
	if len(s.Rows) != want {
		t.Fatalf("%d rows, want %d", len(s.Rows), want)
	}
	r, err := icetable.ParseRanges(s.Props[icetable.RangesProperty])
	if err != nil {
		t.Fatal(err)
	}
	sum, err := icetable.ParseRanges(s.Snapshots[len(s.Snapshots)-1].Summary[icetable.RangesProperty])
	if err != nil {
		t.Fatal(err)
	}
	for p, l := range last {
		id := icetable.PartitionID{Stream: "app", Topic: "logs", Partition: p}
		if r[id] != (icetable.Position{Last: l}) || sum[id] != r[id] {
			t.Fatalf("partition %d: property at %+v, summary at %+v; want last offset %d", p, r[id], sum[id], l)
		}
	}
}

// barrier holds every LoadTable until n callers have loaded once, so that
// n registrars plan on the same parent and commit at once.
// registerTogether has two fan-out workers register their work in one
// table at once, both loading it before either commits (a barrier).
func registerTogether(t *testing.T, cat icetable.Catalog, registrar func(icetable.Catalog) *icetable.Registrar, work [2]map[icetable.PartitionID]icetable.Target) [2]icetable.Result {
	t.Helper()
	bar := &barrier{Catalog: cat, n: 2, all: make(chan struct{})}
	var wg sync.WaitGroup
	var results [2]icetable.Result
	var errs [2]error
	for w := range 2 {
		wg.Go(func() { results[w], errs[w] = registrar(bar).Register(context.Background(), work[w]) })
	}
	wg.Wait()
	for w := range 2 {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
	}
	return results
}

type barrier struct {
	icetable.Catalog
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (b *barrier) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := b.Catalog.LoadTable(ctx, ident)
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(20 * time.Second):
	}
	return tbl, err
}

// TestTwoWorkersCommitAtOnce: two workers (fan-out) register different
// partitions of one table from the same parent snapshot, at the same time;
// the REST catalog takes one commit and refuses the other, which plans
// again on the new parent. No range is lost, no file is added twice, and
// the schema widens to a column only one worker's files have.
func TestTwoWorkersCommitAtOnce(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	cat := l.catalog(t, nil)
	// A first commit creates the table, so both workers find it.
	first := map[icetable.PartitionID]icetable.Target{}
	for p := uint32(0); p < 4; p++ {
		it := l.archive(t, p, 0, 99, false)
		first[icetable.PartitionID{Stream: "app", Topic: "logs", Partition: p}] = icetable.Target{Through: icetable.Position{Last: 99}, Items: []icetable.Item{it}}
	}
	if _, err := l.registrar(cat).Register(ctx, first); err != nil {
		t.Fatal(err)
	}
	work := [2]map[icetable.PartitionID]icetable.Target{{}, {}}
	for p := uint32(0); p < 4; p++ {
		a := l.archive(t, p, 100, 149, p%2 == 1)
		b := l.archive(t, p, 150, 199, p%2 == 1)
		work[p%2][icetable.PartitionID{Stream: "app", Topic: "logs", Partition: p}] = icetable.Target{Through: icetable.Position{Last: 199}, Items: []icetable.Item{a, b}}
	}
	results := registerTogether(t, cat, l.registrar, work)
	if results[0].Commits != 1 || results[1].Commits != 1 || results[0].Conflicts+results[1].Conflicts < 1 {
		t.Fatalf("results %+v: want one commit each and a conflict", results)
	}
	t.Logf("worker results: %+v, %+v", results[0], results[1])
	s := l.read(t, "partition_id,offset,k,n,more")
	checkOnce(t, s, map[uint32]uint64{0: 199, 1: 199, 2: 199, 3: 199})
	more := 0
	for _, r := range s.Rows {
		if r[4] != nil {
			more++
		}
	}
	if more != 2*100 { // partitions 1 and 3, offsets 100..199
		t.Fatalf("%d rows have the widened column, want 200", more)
	}
	if len(s.DataFiles) != 12 {
		t.Fatalf("%d data files, want 12", len(s.DataFiles))
	}
}

// lossy loses the reply of the first commit the catalog takes (the table
// changed, the client sees an error), and with failReload the reply of
// the load right after it too.
type lossy struct {
	next       http.RoundTripper
	failReload bool
	lost       atomic.Int32
}

func (l *lossy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	isCommit := r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/tables/")
	if isCommit && resp.StatusCode == http.StatusOK && l.lost.CompareAndSwap(0, 1) {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (test: the commit's reply is lost)")
	}
	if l.failReload && r.Method == http.MethodGet && l.lost.CompareAndSwap(1, 2) {
		resp.Body.Close()
		return nil, errors.New("connection reset by peer (test: the reload's reply is lost)")
	}
	return resp, nil
}

// TestLostCommitReply: the catalog takes a commit but its reply is lost.
// The registrar finds its ranges in the reloaded table and counts it done;
// when the reload fails too, the next run finds them and adds nothing.
// Either way every file is in the table once.
func TestLostCommitReply(t *testing.T) {
	for _, failReload := range []bool{false, true} {
		t.Run(fmt.Sprintf("reload fails %v", failReload), func(t *testing.T) {
			l := newLake(t)
			ctx := context.Background()
			loss := &lossy{next: http.DefaultTransport, failReload: failReload}
			cat := l.catalog(t, loss)
			id := icetable.PartitionID{Stream: "app", Topic: "logs", Partition: 0}
			// The table exists already, so the lost reply is an append's.
			it := l.archive(t, 0, 0, 9, false)
			if _, err := l.registrar(l.catalog(t, nil)).Register(ctx, map[icetable.PartitionID]icetable.Target{id: {Through: icetable.Position{Last: 9}, Items: []icetable.Item{it}}}); err != nil {
				t.Fatal(err)
			}
			a, b := l.archive(t, 0, 10, 19, false), l.archive(t, 0, 20, 29, false)
			target := map[icetable.PartitionID]icetable.Target{id: {Through: icetable.Position{Last: 29}, Items: []icetable.Item{a, b}}}
			res, err := l.registrar(cat).Register(ctx, target)
			if loss.lost.Load() == 0 {
				t.Fatal("no commit reply was lost")
			}
			if failReload {
				if err == nil {
					t.Fatal("Register succeeded though it could not tell whether its commit took")
				}
				// The next run: a fresh registrar, the same work.
				res, err = l.registrar(l.catalog(t, nil)).Register(ctx, target)
				if err != nil || res.Commits != 0 || res.Files != 0 {
					t.Fatalf("the next run: %+v, %v; want no commit (the table has it)", res, err)
				}
			} else if err != nil || res.Commits != 1 {
				t.Fatalf("Register: %+v, %v; want the commit counted", res, err)
			}
			checkOnce(t, l.read(t, "partition_id,offset,k,n"), map[uint32]uint64{0: 29})
		})
	}
}

// TestCheckFindsDuplicatesAndStrays: the table check passes a table the
// registrar made, and fails one where another writer added an archived
// object a second time, or a copy of one at another key: the copy's rows
// are archived offsets, so they are named doubled (offsets and files), not
// outside.
func TestCheckFindsDuplicatesAndStrays(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	cat := l.catalog(t, nil)
	reg := l.registrar(cat)
	id := icetable.PartitionID{Stream: "app", Topic: "logs", Partition: 0}
	a, b := l.archive(t, 0, 0, 9, false), l.archive(t, 0, 10, 19, false)
	if _, err := reg.Register(ctx, map[icetable.PartitionID]icetable.Target{id: {Through: icetable.Position{Last: 19}, Items: []icetable.Item{a, b}}}); err != nil {
		t.Fatal(err)
	}
	reps, err := reg.Check(ctx, []icetable.PartitionID{id}, nil)
	if err != nil || len(reps) != 1 || !reps[0].OK() || reps[0].Files != 2 || reps[0].Partitions != 1 {
		t.Fatalf("check of a clean table: %+v, %v", reps, err)
	}
	// Another writer adds b again, and a stray copy of a elsewhere.
	stray := "copies/" + a.Key
	body, err := l.s3.Client(t).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(a.Key)})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(body.Body)
	body.Body.Close()
	if _, err := l.s3.Client(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(stray), Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"iggy", "app_logs"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, []string{"s3://" + bucket + "/" + b.Key, "s3://" + bucket + "/" + stray}, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	reps, err = reg.Check(ctx, []icetable.PartitionID{id}, nil)
	if err != nil || len(reps) != 1 {
		t.Fatalf("check: %+v, %v", reps, err)
	}
	r := reps[0]
	if r.OK() || len(r.Twice) != 2 || !strings.Contains(r.Twice[0], b.Key+" (2 times)") || !strings.Contains(r.Twice[1], "offsets 0..9: 2 times") ||
		!strings.Contains(r.Twice[1], a.Key) || !strings.Contains(r.Twice[1], stray) || len(r.Outside) != 0 || len(r.Missing) != 0 {
		t.Fatalf("check of a spoiled table: %+v", r)
	}
}

package icetable_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// render writes partition p's payloads (offsets from first) as one
// Parquet object conformed by fn (nil: inferred only), archives it, and
// returns its item, bytes and the offsets the file rejected.
func (l *lake) render(t *testing.T, p uint32, first uint64, payloads []string, fn parquet.ConformFunc) (icetable.Item, []byte, []uint64) {
	t.Helper()
	enc, err := parquet.NewEncoder(parquet.Options{Payload: parquet.PayloadJSON, IncludeMetadata: true, Conform: fn})
	if err != nil {
		t.Fatal(err)
	}
	enc.Reset(parquet.Source{Stream: "app", Topic: "logs", Partition: p})
	for _, pl := range payloads {
		if err := enc.Observe([]byte(pl)); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := enc.Begin(&out); err != nil {
		t.Fatal(err)
	}
	var rejected []uint64
	for i, pl := range payloads {
		off := first + uint64(i)
		err := enc.Write(&parquet.Record{Offset: off, Timestamp: 1_700_000_000_000_000 + off, Payload: []byte(pl)})
		var re *parquet.RecordError
		switch {
		case errors.As(err, &re):
			rejected = append(rejected, off)
		case err != nil:
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	it := l.put(t, p, first, first+uint64(len(payloads))-1, out.Bytes())
	return it, out.Bytes(), rejected
}

// TestForbiddenTypeChangeGoesToTheErrorObject: three workers (separate
// processes: each its own view of the table) write a partition each.
// Worker A's files make n a long; worker B's view is stale when its file
// brings a new column y as a long, while worker C, staler still, brings
// y as strings and n with fractions. Each file takes the table's types:
// the records whose values those types cannot hold are rejected (for the
// error object), every file joins the table, and a file rendered again
// after all that has the same bytes. Without conforming, C's file cannot
// join the table.
func TestForbiddenTypeChangeGoesToTheErrorObject(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	fixed, err := icetable.FixedColumns(parquet.Options{IncludeMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	worker := func() *icetable.Registrar {
		r := l.registrar(l.catalog(t, nil))
		r.Fixed = fixed
		return r
	}
	a, b, c := worker(), worker(), worker()
	rows := func(p uint32, n int, f func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(`{"k":"%d-%d",%s}`, p, i, f(i))
		}
		return out
	}
	aRows := rows(0, 50, func(i int) string { return fmt.Sprintf(`"n":%d`, i) })
	itA, bytesA, rej := l.render(t, 0, 0, aRows, a.Conform("app", "logs"))
	if len(rej) != 0 {
		t.Fatalf("worker A's file rejected %v", rej)
	}
	// B and C read the table now (A's columns), then A's view goes on.
	if _, _, rej := l.render(t, 1, 0, rows(1, 1, func(int) string { return `"n":0` }), b.Conform("app", "logs")); len(rej) != 0 {
		t.Fatal(rej)
	}
	if _, _, rej := l.render(t, 2, 0, rows(2, 1, func(int) string { return `"n":0` }), c.Conform("app", "logs")); len(rej) != 0 {
		t.Fatal(rej)
	}
	itB, _, rej := l.render(t, 1, 1, rows(1, 40, func(i int) string { return fmt.Sprintf(`"n":%d,"y":%d`, i, i) }), b.Conform("app", "logs"))
	if len(rej) != 0 {
		t.Fatalf("worker B's file rejected %v", rej)
	}
	// C: y as strings (every 4th a number), n with a fraction every 5th.
	cRows := rows(2, 40, func(i int) string {
		y := fmt.Sprintf(`"y%d"`, i)
		if i%4 == 0 {
			y = fmt.Sprint(i)
		}
		n := fmt.Sprint(i)
		if i%5 == 0 {
			n = fmt.Sprintf("%d.5", i)
		}
		return fmt.Sprintf(`"n":%s,"y":%s`, n, y)
	})
	// Control: inferred alone, C's file makes y a string and n a double,
	// which the table cannot take.
	plain, _, _ := l.render(t, 3, 0, cRows, nil)
	if res, err := worker().Register(ctx, map[icetable.PartitionID]icetable.Target{{Stream: "app", Topic: "logs", Partition: 3}: {Through: icetable.Position{Last: plain.Last}, Items: []icetable.Item{plain}}}); !errors.Is(err, icetable.ErrSchema) {
		t.Logf("%+v", res)
		t.Fatalf("registering a file of forbidden types: %v, want ErrSchema", err)
	}
	itC, _, rejC := l.render(t, 2, 1, cRows, c.Conform("app", "logs"))
	var want []uint64
	for i := range 40 {
		if i%4 != 0 || i%5 == 0 { // y a string, or n a fraction
			want = append(want, uint64(1+i))
		}
	}
	if fmt.Sprint(rejC) != fmt.Sprint(want) {
		t.Fatalf("worker C's file rejected offsets %v, want %v", rejC, want)
	}

	// Every worker registers its partition; every file joins the table.
	for _, w := range []struct {
		r    *icetable.Registrar
		p    uint32
		item icetable.Item
	}{{a, 0, itA}, {b, 1, itB}, {c, 2, itC}} {
		items := []icetable.Item{w.item}
		if w.p != 0 {
			items = l.objects[icetable.PartitionID{Stream: "app", Topic: "logs", Partition: w.p}]
		}
		if _, err := w.r.Register(ctx, map[icetable.PartitionID]icetable.Target{{Stream: "app", Topic: "logs", Partition: w.p}: {Through: icetable.Position{Last: w.item.Last}, Items: items}}); err != nil {
			t.Fatalf("partition %d: %v", w.p, err)
		}
	}
	s := l.read(t, "partition_id,offset,n,y")
	if got, want := len(s.Rows), 50+1+40+1+(40-len(rejC)); got != want {
		t.Fatalf("the table holds %d rows, want %d", got, want)
	}
	for _, r := range s.Rows {
		if p := fmt.Sprint(r[0]); p == "2" && r[3] != nil {
			if _, err := fmt.Sscan(fmt.Sprint(r[3]), new(int64)); err != nil {
				t.Fatalf("partition 2 row %v: y %v is not a long", r[1], r[3])
			}
		}
	}
	// Worker A's file, rendered again with a fresh view of the table,
	// has the same bytes.
	_, again, _ := l.render(t, 0, 0, aRows, worker().Conform("app", "logs"))
	if !bytes.Equal(again, bytesA) {
		t.Fatal("a file rendered again after the table gained columns has other bytes")
	}
}

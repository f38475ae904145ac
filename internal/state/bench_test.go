package state

import (
	"context"
	"testing"
	"time"
)

// BenchmarkObjectCycle measures the state cost of one object: SetIntent + Complete.
func BenchmarkObjectCycle(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) Store
	}{
		{"memory", func(*testing.B) Store { return NewMemory(nil) }},
		{"minidyn-http", func(b *testing.B) Store {
			client := newDynamoClient(serveMinidyn(b))
			d := NewDynamo(client, "bench", nil)
			if err := d.EnsureTable(context.Background()); err != nil {
				b.Fatal(err)
			}
			return d
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			store := st.new(b)
			s, err := store.Acquire(ctx, testKey, "bench", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			next := uint64(0)
			b.ReportAllocs()
			for b.Loop() {
				if s, err = store.SetIntent(ctx, s, Intent{First: next, Last: next + 999, ObjectKey: "k"}, time.Hour); err != nil {
					b.Fatal(err)
				}
				if s, err = store.Complete(ctx, s, Done{Messages: 1000, Bytes: 1 << 20}, time.Hour); err != nil {
					b.Fatal(err)
				}
				next += 1000
			}
		})
	}
}

func BenchmarkDecodeItem(b *testing.B) {
	item := validItem()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeItem(item); err != nil {
			b.Fatal(err)
		}
	}
}

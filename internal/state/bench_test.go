package state

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// BenchmarkObjectCycle measures the state cost of one object: SetIntent +
// Complete, two conditional writes, one partition at a time; on
// moto_server also with 4 partitions at once (each its own item), which
// shows whether the store serves writes side by side:
//
//	go test ./internal/state -run '^$' -bench ObjectCycle
func BenchmarkObjectCycle(b *testing.B) {
	stores := []struct {
		name string
		new  func(b *testing.B) Store
	}{
		{"memory", func(*testing.B) Store { return NewMemory(nil) }},
		{"minidyn-http", func(b *testing.B) Store { return benchTable(b, newDynamoClient(serveMinidyn(b))) }},
		{"moto", func(b *testing.B) Store { return benchTable(b, startMoto(b)) }},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			store := st.new(b)
			s, err := store.Acquire(context.Background(), testKey, "bench", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			next := uint64(0)
			b.ReportAllocs()
			for b.Loop() {
				if s, err = objectCycle(store, s, next); err != nil {
					b.Fatal(err)
				}
				next += 1000
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(2*b.N), "ms/write")
		})
	}
	b.Run("moto-4-partitions", func(b *testing.B) {
		store := benchTable(b, startMoto(b))
		var part atomic.Uint32
		b.SetParallelism(max(1, 4/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			key := testKey
			key.Partition = part.Add(1)
			s, err := store.Acquire(context.Background(), key, "bench", time.Hour)
			next := uint64(0)
			for err == nil && pb.Next() {
				s, err = objectCycle(store, s, next)
				next += 1000
			}
			if err != nil {
				b.Error(err) // not Fatal: this is not the benchmark's goroutine
			}
		})
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(2*b.N), "ms/write")
	})
}

func benchTable(b *testing.B, client *dynamodb.Client) Store {
	d := NewDynamo(client, fmt.Sprintf("bench-%d", tableSeq.Add(1)), nil)
	if err := d.EnsureTable(context.Background()); err != nil {
		b.Fatal(err)
	}
	return d
}

// objectCycle records an intent for 1000 offsets from next and completes it.
func objectCycle(store Store, s State, next uint64) (State, error) {
	ctx := context.Background()
	s, err := store.SetIntent(ctx, s, Intent{First: next, Last: next + 999, ObjectKey: "k"}, time.Hour)
	if err != nil {
		return s, err
	}
	return store.Complete(ctx, s, Done{Messages: 1000, Bytes: 1 << 20}, time.Hour)
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

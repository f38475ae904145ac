package batch

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// TestSplitMatchesOneAccumulatorPerValue feeds random messages of random
// values to a Split and checks, for every unit it closes, what a reader
// of the archive checks: each value's object holds exactly that value's
// records in offset order, byte for byte what an Accumulator of those
// records alone renders; the units follow each other without a hole;
// none exceeds the count, size or value limits (unless one record alone
// does); and a unit ends only when a limit says so.
func TestSplitMatchesOneAccumulatorPerValue(t *testing.T) {
	for _, format := range []Format{FormatJSONLines, FormatJSONArray, FormatParquet} {
		for seed := int64(1); seed <= 20; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", format, seed), func(t *testing.T) {
				checkSplit(t, format, seed)
			})
		}
	}
}

func checkSplit(t *testing.T, format Format, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	opts := Options{Format: format, Schema: SchemaJSON, IncludeMetadata: true}
	enc, err := NewEncoder(Partition{Stream: "s", Topic: "t", ID: 1}, opts)
	if err != nil {
		t.Fatal(err)
	}
	rot := Rotation{MaxBytes: int64(200 + rng.Intn(3000)), MaxMessages: uint64(1 + rng.Intn(40)), Cut: CutHour}
	keep := int64(rng.Intn(4000))
	maxValues := 1 + rng.Intn(5)
	s := NewSplit(enc, rot, keep, maxValues)
	values := []string{"a", "b", "c", "d", "e", "f", "g"}[:1+rng.Intn(7)]
	type rec struct {
		m     Message
		value string
	}
	var unit []rec
	next := uint64(0)
	ts := uint64(time.Date(2026, 3, 16, 14, 0, 0, 0, time.UTC).UnixMicro())
	closeUnit := func(why string) {
		t.Helper()
		if len(unit) == 0 {
			return
		}
		if s.First() != unit[0].m.Offset || s.Last() != unit[len(unit)-1].m.Offset || s.Len() != len(unit) {
			t.Fatalf("unit %d..%d (%d), want %d..%d (%d)", s.First(), s.Last(), s.Len(), unit[0].m.Offset, unit[len(unit)-1].m.Offset, len(unit))
		}
		if len(s.Values()) > maxValues {
			t.Fatalf("unit holds %d values, max %d", len(s.Values()), maxValues)
		}
		if len(unit) > 1 && (uint64(s.Len()) > rot.MaxMessages || s.Size() > rot.MaxBytes) {
			t.Fatalf("unit of %d records, %d bytes: over the limits %d, %d", s.Len(), s.Size(), rot.MaxMessages, rot.MaxBytes)
		}
		var total int64
		for _, v := range s.Values() {
			part := s.Part(v)
			total += part.Size()
			want := NewAccumulator(enc, Rotation{}, 1<<30)
			for _, r := range unit {
				if r.value == v {
					r := r
					if ok, err := want.Add(&r.m); !ok || err != nil {
						t.Fatalf("reference accumulator: %v %v", ok, err)
					}
				}
			}
			if part.Len() != want.Len() || part.First() != want.First() || part.Last() != want.Last() {
				t.Fatalf("value %q: %d records %d..%d, want %d %d..%d", v, part.Len(), part.First(), part.Last(), want.Len(), want.First(), want.Last())
			}
			if s.Spilled() != part.Spilled() {
				t.Fatalf("value %q spilled %v, unit %v", v, part.Spilled(), s.Spilled())
			}
			if s.Spilled() {
				continue
			}
			got, _, err := part.Render()
			wantBytes, _, err2 := want.Render()
			if err != nil || err2 != nil || !bytes.Equal(got, wantBytes) {
				t.Fatalf("value %q renders %d bytes (%v), want %d (%v)", v, len(got), err, len(wantBytes), err2)
			}
		}
		if total != s.Size() {
			t.Fatalf("unit size %d, its values' together %d", s.Size(), total)
		}
		if why == "" && !s.Full() {
			t.Fatalf("the unit refused a record without being full")
		}
		unit = unit[:0]
		s.Reset()
	}
	for i := 0; i < 400; i++ {
		ts += uint64(rng.Intn(120)) * uint64(time.Second/time.Microsecond)
		payload := fmt.Sprintf(`{"i":%d,"pad":%q}`, i, bytes.Repeat([]byte("x"), rng.Intn(200)))
		r := rec{m: Message{Offset: next, Timestamp: ts, Payload: []byte(payload)}, value: values[rng.Intn(len(values))]}
		ok, err := s.Add(&r.m, []byte(r.value))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if len(unit) == 0 {
				t.Fatal("an empty unit refused a record")
			}
			closeUnit("")
			if ok, err := s.Add(&r.m, []byte(r.value)); !ok || err != nil {
				t.Fatalf("an empty unit refused offset %d: %v", next, err)
			}
		}
		unit = append(unit, r)
		next++
		if s.Full() {
			closeUnit("full")
		}
	}
	closeUnit("end")
}

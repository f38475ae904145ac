package icetable

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func obj(gen uint32, first, last uint64) Item {
	return Item{Key: "k", Generation: gen, First: first, Last: last, Data: true}
}

func gap(gen uint32, first, last uint64) Item {
	return Item{Key: "gap", Generation: gen, First: first, Last: last}
}

func TestExtend(t *testing.T) {
	tests := []struct {
		name     string
		pos      Position
		has      bool
		items    []Item
		complete bool
		wantAdd  int
		wantNext Position
		wantOK   bool
		wantErr  bool
	}{
		{"follows exactly", Position{0, 9}, true, []Item{obj(0, 10, 19), obj(0, 20, 29)}, false, 2, Position{0, 29}, true, false},
		{"registered ones passed over", Position{0, 19}, true, []Item{obj(0, 10, 19), obj(0, 20, 29)}, false, 1, Position{0, 29}, true, false},
		{"all registered", Position{0, 29}, true, []Item{obj(0, 10, 19), obj(0, 20, 29)}, false, 0, Position{0, 29}, false, false},
		{"begins later: list", Position{0, 9}, true, []Item{obj(0, 20, 29)}, false, 0, Position{0, 9}, false, false},
		{"overlap is an error", Position{0, 14}, true, []Item{obj(0, 10, 19)}, false, 0, Position{0, 14}, false, true},
		{"gap markers advance, add nothing", Position{0, 9}, true, []Item{gap(0, 10, 19), obj(0, 20, 29)}, false, 1, Position{0, 29}, true, false},
		{"an unreported gap stops the chain", Position{0, 9}, true, []Item{obj(0, 10, 19), obj(0, 25, 29)}, false, 1, Position{0, 19}, true, false},
		{"never registered needs the archive", Position{}, false, []Item{obj(0, 0, 9)}, false, 0, Position{}, false, false},
		{"never registered, whole archive", Position{}, false, []Item{obj(0, 5, 9), obj(0, 10, 19)}, true, 2, Position{0, 19}, true, false},
		{"a new generation only from the archive", Position{0, 9}, true, []Item{obj(1, 0, 9)}, false, 0, Position{0, 9}, false, false},
		{"old generation's rest, then the new one", Position{0, 9}, true, []Item{obj(0, 0, 9), obj(0, 10, 19), obj(1, 0, 4)}, true, 2, Position{1, 4}, true, false},
		{"the run's items stop at a generation change", Position{0, 9}, true, []Item{obj(0, 10, 19), obj(1, 0, 4)}, false, 1, Position{0, 19}, true, false},
		{"empty", Position{0, 9}, true, nil, true, 0, Position{0, 9}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			add, next, ok, err := extend(tt.pos, tt.has, tt.items, tt.complete)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(add) != tt.wantAdd || next != tt.wantNext || ok != tt.wantOK {
				t.Fatalf("got %d files, next %+v, ok %v; want %d, %+v, %v", len(add), next, ok, tt.wantAdd, tt.wantNext, tt.wantOK)
			}
		})
	}
}

// TestExtendRandomized cuts random archives into random runs and checks
// that chaining them from every registered position adds each data item
// exactly once, in order, whichever way the runs come (the archive listed
// when a run's items do not follow).
func TestExtendRandomized(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var archive []Item
		for g := uint32(0); g <= uint32(rng.IntN(3)); g++ {
			off := uint64(rng.IntN(3)) * 5 // a generation may start past 0
			for range 1 + rng.IntN(8) {
				n := uint64(1 + rng.IntN(5))
				it := obj(g, off, off+n-1)
				it.Data = rng.IntN(4) != 0
				archive = append(archive, it)
				off += n
			}
		}
		var pos Position
		has := false
		var registered []Item
		for i := 0; i < len(archive); {
			j := min(len(archive), i+1+rng.IntN(4))
			start := i
			if rng.IntN(3) == 0 && i > 0 { // a run that repeats an earlier object
				start = i - 1
			}
			run := archive[start:j]
			add, next, ok, err := extend(pos, has, run, false)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if !ok || next.Before(Position{archive[j-1].Generation, archive[j-1].Last}) {
				add, next, ok, err = extend(pos, has, archive[:j], true)
				if err != nil || !ok {
					t.Fatalf("seed %d: from the archive: ok %v, %v", seed, ok, err)
				}
			}
			registered = append(registered, add...)
			pos, has = next, true
			i = j
		}
		var want []Item
		for _, it := range archive {
			if it.Data {
				want = append(want, it)
			}
		}
		if !slices.EqualFunc(registered, want, func(a, b Item) bool {
			return a.Key == b.Key && a.Generation == b.Generation && a.First == b.First && a.Last == b.Last && a.Data == b.Data
		}) {
			t.Fatalf("seed %d: registered %v, want %v", seed, registered, want)
		}
	}
}

func TestRanges(t *testing.T) {
	r := Ranges{{"s", "t", 2}: {0, 99}, {"s", "t", 1}: {1, 5}, {"a", "b", 0}: {0, 0}}
	s := r.String()
	want := `[{"stream":"a","topic":"b","partition":0,"generation":0,"last_offset":0},{"stream":"s","topic":"t","partition":1,"generation":1,"last_offset":5},{"stream":"s","topic":"t","partition":2,"generation":0,"last_offset":99}]`
	if s != want {
		t.Fatalf("String:\n got %s\nwant %s", s, want)
	}
	back, err := ParseRanges(s)
	if err != nil || back.String() != s {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	if !back.Covers(r) || !r.Covers(Ranges{{"s", "t", 2}: {0, 50}}) || r.Covers(Ranges{{"s", "t", 2}: {1, 0}}) || r.Covers(Ranges{{"x", "t", 0}: {0, 0}}) {
		t.Fatal("Covers")
	}
	for _, bad := range []string{`{}`, `[{"stream":"","topic":"t"}]`, `[{"stream":"s","topic":"t","partition":1},{"stream":"s","topic":"t","partition":1}]`, `[{"stream":"s","topic":"t","last_offset":-1}]`} {
		if _, err := ParseRanges(bad); err == nil {
			t.Errorf("ParseRanges(%s) took it", bad)
		}
	}
	if r, err := ParseRanges(""); err != nil || len(r) != 0 {
		t.Fatalf(`ParseRanges(""): %v, %v`, r, err)
	}
}

func FuzzParseRanges(f *testing.F) {
	f.Add(`[{"stream":"s","topic":"t","partition":1,"generation":2,"last_offset":3}]`)
	f.Add(`[]`)
	f.Add(`[{"stream":"s"}]`)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRanges(s)
		if err != nil {
			return
		}
		again, err := ParseRanges(r.String())
		if err != nil || again.String() != r.String() {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	})
}

package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// varied returns n messages with payload sizes spread over [1, 300) bytes.
func varied(n int, seed uint64) []Message {
	r := rand.New(rand.NewPCG(seed, 1))
	msgs := make([]Message, n)
	for i := range msgs {
		body := strings.Repeat("x", r.IntN(290))
		msgs[i] = Message{Offset: uint64(100 + i), Timestamp: ts42 + uint64(i)*1_500_000, Payload: fmt.Appendf(nil, `{"i":%d,"s":"%s"}`, i, body)}
	}
	return msgs
}

// objects feeds msgs through a, as the drain does, and returns the objects.
func objects(t *testing.T, a *Accumulator, msgs []Message) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < len(msgs); {
		ok, err := a.Add(&msgs[i])
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			i++
			if !a.Full() {
				continue
			}
		}
		if a.Len() == 0 {
			t.Fatal("empty object refused a message")
		}
		out = append(out, append([]byte(nil), a.Bytes()...))
		a.Reset()
	}
	if a.Len() > 0 {
		out = append(out, append([]byte(nil), a.Bytes()...))
		a.Reset()
	}
	return out
}

func TestRotationBySize(t *testing.T) {
	msgs := varied(500, 1)
	for _, format := range []Format{"json_lines", "json_array", "raw"} {
		for _, limit := range []int64{1, 200, 1000, 4096, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", format, limit), func(t *testing.T) {
				e := mustEncoder(t, appLogs, Options{Format: format, Schema: "json", IncludeMetadata: true})
				a := NewAccumulator(e, Rotation{MaxBytes: limit}, 1<<30)
				objs := objects(t, a, msgs)
				var all []byte
				count := 0
				for k, obj := range objs {
					recs := records(t, format, obj)
					count += recs
					if int64(len(obj)) > limit && recs > 1 {
						t.Errorf("object %d has %d bytes > limit %d with %d records", k, len(obj), limit, recs)
					}
					// Greedy: the next object's first record did not fit here.
					if k+1 < len(objs) && format != "raw" {
						next := firstRecordLen(t, e, format, objs[k+1])
						if int64(len(obj))+next <= limit {
							t.Errorf("object %d (%d bytes) closed although a %d-byte record fitted under %d", k, len(obj), next, limit)
						}
					}
					all = append(all, obj...)
				}
				if format != "raw" && count != len(msgs) {
					t.Errorf("objects hold %d records, want %d", count, len(msgs))
				}
				if format == "json_lines" {
					if want := renderObject(t, e, msgs); !bytes.Equal(all, want) {
						t.Error("objects concatenated differ from one object of all messages")
					}
				}
			})
		}
	}
}

// records counts and checks the records of one object.
func records(t *testing.T, format Format, obj []byte) int {
	t.Helper()
	switch format {
	case "json_array":
		var v []json.RawMessage
		if err := json.Unmarshal(obj, &v); err != nil {
			t.Fatalf("object is not a JSON array: %v", err)
		}
		return len(v)
	case "json_lines":
		if !bytes.HasSuffix(obj, []byte("\n")) {
			t.Fatal("json_lines object does not end with a newline")
		}
		n := 0
		for _, line := range bytes.Split(obj[:len(obj)-1], []byte("\n")) {
			if !json.Valid(line) {
				t.Fatalf("invalid line %q", line)
			}
			n++
		}
		return n
	}
	d := json.NewDecoder(bytes.NewReader(obj))
	n := 0
	for d.More() {
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// firstRecordLen is the size the first record of obj would take as a later
// record of another object.
func firstRecordLen(t *testing.T, e *Encoder, format Format, obj []byte) int64 {
	t.Helper()
	switch format {
	case "json_array":
		var v []json.RawMessage
		if err := json.Unmarshal(obj, &v); err != nil {
			t.Fatal(err)
		}
		return int64(len(v[0]) + 1) // plus its ','
	default:
		return int64(bytes.IndexByte(obj, '\n') + 1)
	}
}

func TestRotationByMessages(t *testing.T) {
	msgs := varied(103, 2)
	for _, max := range []uint64{1, 2, 10, 103, 1000} {
		e := mustEncoder(t, appLogs, Options{Format: "json_array", Schema: "json"})
		a := NewAccumulator(e, Rotation{MaxMessages: max}, 1<<30)
		objs := objects(t, a, msgs)
		total := 0
		for k, obj := range objs {
			n := records(t, "json_array", obj)
			total += n
			if uint64(n) > max || (k+1 < len(objs) && uint64(n) != max) {
				t.Errorf("max %d: object %d holds %d records", max, k, n)
			}
		}
		if total != len(msgs) {
			t.Errorf("max %d: %d records in objects, want %d", max, total, len(msgs))
		}
	}
}

func TestAccumulatorAccounting(t *testing.T) {
	msgs := varied(20, 3)
	e := mustEncoder(t, appLogs, Options{Format: "json_array", Schema: "json", IncludeMetadata: true})
	a := NewAccumulator(e, Rotation{}, 1<<30)
	if a.Size() != 2 || a.Len() != 0 || a.Full() || string(a.Bytes()) != "[]" {
		t.Fatalf("empty: size %d len %d full %v bytes %q", a.Size(), a.Len(), a.Full(), a.Bytes())
	}
	for i := range msgs {
		if ok, err := a.Add(&msgs[i]); !ok || err != nil {
			t.Fatalf("Add without limits = %v, %v", ok, err)
		}
		if got := int64(len(a.Bytes())); got != a.Size() {
			t.Fatalf("after %d adds Size() = %d, len(Bytes()) = %d", i+1, a.Size(), got)
		}
	}
	if a.First() != 100 || a.Last() != 119 || a.Len() != 20 || a.FirstTimestamp() != ts42 || a.LastTimestamp() != msgs[19].Timestamp {
		t.Errorf("First %d Last %d Len %d FirstTimestamp %d LastTimestamp %d", a.First(), a.Last(), a.Len(), a.FirstTimestamp(), a.LastTimestamp())
	}
	if want := renderObject(t, e, msgs); !bytes.Equal(a.Bytes(), want) {
		t.Error("Bytes() differs from the encoder's rendering")
	}
	a.Reset()
	if a.Len() != 0 || a.Size() != 2 || a.Spilled() {
		t.Errorf("after Reset: len %d size %d spilled %v", a.Len(), a.Size(), a.Spilled())
	}
}

func TestFullAndOversizedRecord(t *testing.T) {
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "raw"})
	one := func(s string) *Message { return &Message{Payload: []byte(s)} }
	// {"payload":1}\n is 14 bytes; the smallest record is 14 bytes too.
	a := NewAccumulator(e, Rotation{MaxBytes: 30}, 1<<20)
	steps := []struct {
		payload string
		ok      bool
	}{
		{"1", true},  // 14 bytes
		{"22", true}, // 15 more: 29 of 30, too little room for any record
	}
	for _, s := range steps {
		ok, err := a.Add(one(s.payload))
		if err != nil || ok != s.ok {
			t.Fatalf("Add(%s) = %v, %v", s.payload, ok, err)
		}
	}
	if !a.Full() {
		t.Errorf("size %d of 30 leaves no room for a 14-byte record, but Full() = false", a.Size())
	}
	if ok, _ := a.Add(one("3")); ok {
		t.Error("Add over the limit accepted")
	}
	if a.Size() != 29 || a.Len() != 2 {
		t.Errorf("refused Add changed the object: size %d len %d", a.Size(), a.Len())
	}
	a.Reset()
	if a.Full() {
		t.Error("Full() after Reset")
	}
	big := strings.Repeat("9", 100)
	if ok, _ := a.Add(one(big)); !ok {
		t.Error("empty object refused an oversized record")
	}
	if !a.Full() || a.Size() != int64(len(big)+13) {
		t.Errorf("oversized record: Full %v size %d", a.Full(), a.Size())
	}

	// Exactly at the limit is full.
	b := NewAccumulator(e, Rotation{MaxBytes: 28}, 1<<20)
	b.Add(one("1"))
	b.Add(one("1"))
	if b.Size() != 28 || !b.Full() {
		t.Errorf("size %d at limit 28: Full() = %v", b.Size(), b.Full())
	}
	// Messages mode: full at the count.
	c := NewAccumulator(e, Rotation{MaxMessages: 2}, 1<<20)
	c.Add(one("1"))
	if c.Full() {
		t.Error("Full() with 1 of 2 messages")
	}
	c.Add(one("1"))
	if !c.Full() {
		t.Error("Full() = false with 2 of 2 messages")
	}
}

func TestRefusedAddDoesNotCountInvalidPayloadTwice(t *testing.T) {
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json"})
	a := NewAccumulator(e, Rotation{MaxBytes: 20}, 1<<20)
	a.Add(&Message{Payload: []byte("1")})
	if ok, _ := a.Add(&Message{Payload: []byte("not json")}); ok {
		t.Fatal("record over the limit accepted")
	}
	if e.InvalidPayloads() != 0 {
		t.Errorf("InvalidPayloads() = %d after a refused Add, want 0", e.InvalidPayloads())
	}
	a.Reset()
	a.Add(&Message{Payload: []byte("not json")})
	if e.InvalidPayloads() != 1 {
		t.Errorf("InvalidPayloads() = %d, want 1", e.InvalidPayloads())
	}
}

func TestDue(t *testing.T) {
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json"})
	a := NewAccumulator(e, Rotation{MaxAge: 5 * time.Minute}, 1<<20)
	first := time.UnixMicro(ts42)
	if a.Due(first.Add(time.Hour)) {
		t.Error("empty object is due")
	}
	a.Add(&Message{Timestamp: ts42, Payload: []byte("1")})
	a.Add(&Message{Timestamp: ts42 + uint64(10*time.Minute/time.Microsecond), Payload: []byte("1")})
	tests := []struct {
		now  time.Time
		want bool
	}{
		{first, false},
		{first.Add(5 * time.Minute), false},
		{first.Add(5*time.Minute + time.Microsecond), true},
		{first.Add(-time.Hour), false},
	}
	for _, tt := range tests {
		if got := a.Due(tt.now); got != tt.want {
			t.Errorf("Due(first+%v) = %v, want %v", tt.now.Sub(first), got, tt.want)
		}
	}
	noAge := NewAccumulator(e, Rotation{}, 1<<20)
	noAge.Add(&Message{Timestamp: ts42, Payload: []byte("1")})
	if noAge.Due(first.Add(24 * time.Hour)) {
		t.Error("Due without MaxAge")
	}
}

func TestSpillKeepsCountingAndStreamingRerenders(t *testing.T) {
	msgs := varied(200, 4)
	for _, format := range []Format{"json_lines", "json_array", "raw"} {
		e := mustEncoder(t, appLogs, Options{Format: format, Schema: "json", IncludeMetadata: true})
		ref := NewAccumulator(e, Rotation{MaxBytes: 16 << 10}, 1<<30)
		sp := NewAccumulator(e, Rotation{MaxBytes: 16 << 10}, 4<<10)
		for i := range msgs {
			ok1, _ := ref.Add(&msgs[i])
			ok2, _ := sp.Add(&msgs[i])
			if ok1 != ok2 || ref.Size() != sp.Size() || ref.Len() != sp.Len() || ref.Full() != sp.Full() {
				t.Fatalf("%s: spilling changed rotation at message %d", format, i)
			}
			if !ok1 {
				break
			}
		}
		if !sp.Spilled() || sp.Bytes() != nil {
			t.Fatalf("%s: object of %d bytes over keepLimit 4096 not spilled", format, sp.Size())
		}
		// Re-render the range by streaming; it must match size and bytes.
		var buf bytes.Buffer
		w, err := NewObjectWriter(&buf, e, "none")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < sp.Len(); i++ {
			if err := w.Write(&msgs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if int64(buf.Len()) != sp.Size() || !bytes.Equal(buf.Bytes(), ref.Bytes()) {
			t.Errorf("%s: streamed object (%d bytes) differs from the accumulated one (%d bytes)", format, buf.Len(), sp.Size())
		}
		sp.Reset()
		if sp.Spilled() {
			t.Errorf("%s: Spilled after Reset", format)
		}
	}
}

func TestAccumulatorSteadyStateAllocs(t *testing.T) {
	msgs := benchMessages(benchLines(1024))
	e := mustEncoder(t, appLogs, Options{Format: "json_lines", Schema: "json", IncludeMetadata: true, IncludeHeaders: true})
	a := NewAccumulator(e, Rotation{MaxBytes: 64 << 10}, 1<<20)
	run := func() {
		for i := range msgs {
			if ok, _ := a.Add(&msgs[i]); !ok {
				a.Reset()
				a.Add(&msgs[i])
			}
		}
	}
	run()
	if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
		t.Errorf("%.1f allocations per %d records in steady state, want 0", allocs, len(msgs))
	}
}

// A released accumulator's object buffer serves the next accumulator that
// needs one (no allocation), and both render their own records.
func TestReleaseRecyclesTheObjectBuffer(t *testing.T) {
	enc := mustEncoder(t, appLogs, Options{Format: FormatJSONLines, Schema: "json"})
	for len(objectBuffers) > 0 { // what other tests left
		<-objectBuffers
	}
	rot := Rotation{MaxBytes: 2 << 20}
	a := NewAccumulator(enc, rot, 4<<20)
	if ok, err := a.Add(&Message{Offset: 1, Payload: []byte(`{"a":1}`)}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	first, _, _ := a.Render()
	backing := &first[:1][0]
	a.Release()
	b := NewAccumulator(enc, rot, 4<<20)
	if ok, err := b.Add(&Message{Offset: 2, Payload: []byte(`{"b":2}`)}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	got, _, _ := b.Render()
	if &got[:1][0] != backing {
		t.Fatal("the second accumulator allocated instead of taking the released buffer")
	}
	if !strings.Contains(string(got), `"b":2`) || strings.Contains(string(got), `"a":1`) {
		t.Fatalf("the second object holds %q", got)
	}
	if a.Len() != 0 || a.Size() != a.emptySize {
		t.Fatal("a released accumulator is not empty")
	}
}

// TestRotationCut feeds seeded runs of messages whose server times cross
// hour, day, month and year boundaries (sometimes going back, as a
// server's clock may) and checks that every object lies in one period,
// that objects end only when full or when the period changes, and that no
// message is lost or repeated.
func TestRotationCut(t *testing.T) {
	start := uint64(time.Date(2025, 12, 31, 22, 50, 0, 0, time.UTC).UnixMicro())
	for _, format := range []Format{"json_lines", "parquet"} {
		for _, cut := range []Cut{CutHour, CutDay, CutMonth, CutYear} {
			for seed := range uint64(20) {
				t.Run(fmt.Sprintf("%s/%d/%d", format, cut, seed), func(t *testing.T) {
					r := rand.New(rand.NewPCG(seed, uint64(cut)))
					msgs := make([]Message, 200+r.IntN(200))
					ts := start
					for i := range msgs {
						switch r.IntN(10) {
						case 0:
							ts += uint64(r.Int64N(int64(40 * 24 * time.Hour / time.Microsecond)))
						case 1:
							ts -= uint64(r.Int64N(int64(time.Minute / time.Microsecond)))
						default:
							ts += uint64(r.Int64N(int64(10 * time.Minute / time.Microsecond)))
						}
						msgs[i] = Message{Offset: uint64(i), Timestamp: ts, Payload: fmt.Appendf(nil, `{"i":%d}`, i)}
					}
					maxMessages := uint64(1 + r.IntN(50))
					e := mustEncoder(t, appLogs, Options{Format: format, Schema: "json", IncludeMetadata: true})
					a := NewAccumulator(e, Rotation{MaxMessages: maxMessages, Cut: cut}, 1<<30)
					next := 0
					for next < len(msgs) {
						first := next
						for next < len(msgs) {
							ok, err := a.Add(&msgs[next])
							if err != nil {
								t.Fatal(err)
							}
							if !ok {
								break
							}
							next++
							if a.Full() {
								break
							}
						}
						if a.Len() == 0 || a.First() != uint64(first) || a.Last() != uint64(next-1) {
							t.Fatalf("object holds %d..%d (%d messages), want %d..%d", a.First(), a.Last(), a.Len(), first, next-1)
						}
						p := cut.Period(msgs[first].Timestamp)
						for _, m := range msgs[first:next] {
							if cut.Period(m.Timestamp) != p {
								t.Fatalf("object %d..%d spans two periods: offset %d", first, next-1, m.Offset)
							}
						}
						if full := uint64(a.Len()) == maxMessages; !full && next < len(msgs) && cut.Period(msgs[next].Timestamp) == p {
							t.Fatalf("object %d..%d ended before offset %d of the same period, not full", first, next-1, next)
						}
						a.Reset()
					}
				})
			}
		}
	}
}

func TestCutPeriod(t *testing.T) {
	at := func(s string) uint64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(tm.UnixMicro())
	}
	for _, tc := range []struct {
		cut        Cut
		a, b       string
		samePeriod bool
	}{
		{CutHour, "2026-03-16T14:00:00Z", "2026-03-16T14:59:59.999999Z", true},
		{CutHour, "2026-03-16T14:59:59.999999Z", "2026-03-16T15:00:00Z", false},
		{CutDay, "2026-03-16T00:00:00Z", "2026-03-16T23:59:59.999999Z", true},
		{CutDay, "2026-03-16T23:59:59.999999Z", "2026-03-17T00:00:00Z", false},
		{CutMonth, "2026-02-01T00:00:00Z", "2026-02-28T23:59:59Z", true},
		{CutMonth, "2025-12-31T23:59:59Z", "2026-01-01T00:00:00Z", false},
		{CutYear, "2026-01-01T00:00:00Z", "2026-12-31T23:59:59Z", true},
		{CutYear, "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z", false},
		{NoCut, "2020-01-01T00:00:00Z", "2030-01-01T00:00:00Z", true},
	} {
		if got := tc.cut.Period(at(tc.a)) == tc.cut.Period(at(tc.b)); got != tc.samePeriod {
			t.Errorf("cut %d: %s and %s in one period = %v, want %v", tc.cut, tc.a, tc.b, got, tc.samePeriod)
		}
	}
}

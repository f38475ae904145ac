package drain_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fields"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// countryValues are the payload values the value tests produce: plain
// strings, ones that need escaping, records without the field or with
// null (the default folder), then a number and an object (a table's
// string column cannot hold them: tables take the first eight).
var countryValues = []struct {
	json    string // the member's JSON, "" for none
	segment string // the folder segment it must land in
}{
	{`"DE"`, "DE"}, {`"FR"`, "FR"}, {`"US"`, "US"}, {`"São Paulo"`, "S%C3%A3o%20Paulo"}, {`"a/../b"`, "a%2F..%2Fb"},
	{`"_errors"`, "%5Ferrors"}, {``, keys.DefaultValueSegment}, {`null`, keys.DefaultValueSegment}, {`""`, keys.DefaultValueSegment}, {`42`, "42"},
	{`{"x":1}`, keys.DefaultValueSegment},
}

// produceValues appends n messages to every partition of topic, each with a
// country drawn by rng from the first kinds of countryValues, and returns
// the folder segment each message must land in, by partition and offset.
func (w *world) produceValues(topic string, partitions, n, kinds int, rng *rand.Rand) [][]string {
	w.t.Helper()
	w.produce(topic, partitions, 0, 0)
	want := make([][]string, partitions)
	for p := 0; p < partitions; p++ {
		for i := 0; i < n; i++ {
			v := countryValues[rng.IntN(kinds)]
			member := ""
			if v.json != "" {
				member = `,"country":` + v.json
			}
			payload := fmt.Appendf(nil, `{"n":%d%s,"pad":"%s"}`, i, member, strings.Repeat("x", rng.IntN(80)))
			w.appendRaw(topic, uint32(p), payload, nil)
			want[p] = append(want[p], v.segment)
		}
	}
	return want
}

// checkValues checks what a reader of an archive partitioned by country
// checks: every produced message is in exactly one data object, in offset
// order within it, with its payload, in the folder of its value; each
// object is listed, with its records, by the manifest of its unit, and
// the manifests' ranges follow each other from offset 0.
func (w *world) checkValues(s *app.Sink, topic, format string, want [][]string) {
	w.t.Helper()
	ctx := context.Background()
	sent := w.sent(topic)
	manifests := map[string]fields.Manifest{} // by key
	listed := map[string]fields.ValueObject{}
	err := s.Objects.List(ctx, s.Config.Plugin.Prefix+"/", func(key string, size int64) error {
		n, ok := keys.ParseName(key)
		if !ok || !n.Manifest || n.Void {
			return nil
		}
		body, err := s.Objects.Get(ctx, key)
		if err != nil {
			return err
		}
		m, err := fields.ParseManifest(body)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		manifests[key] = m
		for _, o := range m.Objects {
			listed[o.Key] = o
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	seen := make([]map[uint64]bool, len(want))
	for p := range seen {
		seen[p] = map[uint64]bool{}
	}
	for _, o := range w.objects(s, s.Config.Plugin.Prefix+"/") {
		lo, ok := listed[o.key]
		if !ok {
			w.t.Fatalf("%s: a data object no manifest lists", o.key)
		}
		recs := decode(w.t, format, o)
		if uint64(len(recs)) != lo.Records {
			w.t.Fatalf("%s: %d records, its manifest says %d", o.key, len(recs), lo.Records)
		}
		prev := int64(-1)
		for _, r := range recs {
			p := r.PartitionID
			if seen[p][r.Offset] {
				w.t.Fatalf("%s: offset %d of partition %d is in two objects", o.key, r.Offset, p)
			}
			seen[p][r.Offset] = true
			if int64(r.Offset) <= prev || r.Offset < o.first || r.Offset > o.last {
				w.t.Fatalf("%s: offset %d out of order or outside the name's range", o.key, r.Offset)
			}
			prev = int64(r.Offset)
			if string(r.Payload) != string(sent[p][r.Offset].payload) {
				w.t.Fatalf("%s offset %d: payload %s, want %s", o.key, r.Offset, r.Payload, sent[p][r.Offset].payload)
			}
			seg := want[p][r.Offset]
			if !strings.Contains(o.key, "/country="+seg+"/") {
				w.t.Fatalf("%s holds offset %d of partition %d, whose value's folder is country=%s", o.key, r.Offset, p, seg)
			}
		}
		delete(listed, o.key)
	}
	for k := range listed {
		w.t.Fatalf("a manifest lists %s, which is not there", k)
	}
	for p := range want {
		if len(seen[p]) != len(want[p]) {
			w.t.Fatalf("partition %d: the objects hold %d of %d messages", p, len(seen[p]), len(want[p]))
		}
	}
	w.checkManifestChain(manifests, len(want), uint64(len(want[0])))
}

// checkManifestChain checks that each partition's manifests cover 0..n-1
// one after the other.
func (w *world) checkManifestChain(manifests map[string]fields.Manifest, partitions int, n uint64) {
	w.t.Helper()
	byPart := make([]map[uint64]fields.Manifest, partitions)
	for p := range byPart {
		byPart[p] = map[uint64]fields.Manifest{}
	}
	for k, m := range manifests {
		if _, dup := byPart[m.Partition][m.First]; dup {
			w.t.Fatalf("%s: two manifests start at offset %d of partition %d", k, m.First, m.Partition)
		}
		byPart[m.Partition][m.First] = m
	}
	for p := range byPart {
		next := uint64(0)
		for next < n {
			m, ok := byPart[p][next]
			if !ok {
				w.t.Fatalf("partition %d: no manifest starts at offset %d", p, next)
			}
			next = m.Last + 1
		}
	}
}

func valueSettings(w *world, bucket, topic, format string) map[string]string {
	set := w.settings(bucket, topic)
	set["SINK_PATH_TEMPLATE"] = "{stream}/{topic}/country={payload.country}/{date}"
	set["SINK_OUTPUT_FORMAT"] = format
	set["SINK_INCLUDE_HEADERS"] = "false"
	set["SINK_FILE_ROTATION"] = "messages"
	set["SINK_MAX_MESSAGES_PER_FILE"] = "30"
	set["SINK_BATCH_LENGTH"] = "25"
	return set
}

// TestValueObjectsExactlyOnce drains topics whose messages carry several
// values, built in memory and streamed, with fewer values allowed per unit
// than there are (units end early), and checks the archive as a reader
// would, and with the audit.
func TestValueObjectsExactlyOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		for _, tc := range []struct {
			format    string
			keep      int64
			maxValues string
		}{{"json_lines", 0, "100"}, {"json_lines", 700, "100"}, {"json_array", 0, "3"}, {"json_lines", 0, "2"}} {
			t.Run(fmt.Sprintf("%s-keep%d-max%s", tc.format, tc.keep, tc.maxValues), func(t *testing.T) {
				t.Parallel()
				w := w.with(t)
				topic := fmt.Sprintf("values-%s-%d-%s", strings.ReplaceAll(tc.format, "_", ""), tc.keep, tc.maxValues)
				want := w.produceValues(topic, 2, 130, len(countryValues), rand.New(rand.NewPCG(1, uint64(tc.keep))))
				set := valueSettings(w, topic, topic, tc.format)
				set["SINK_MAX_PARTITION_VALUES"] = tc.maxValues
				s := w.sink(w.config(set), app.Options{KeepLimit: tc.keep})
				w.drainUntilQuiet(s, topic, 20)
				w.checkValues(s, topic, tc.format, want)
				w.auditClean(s)
			})
		}
	})
}

// TestValueCrashAtEveryStep aborts a run at every step of writing a unit
// with several values, as a dying process would, for seeds that pick
// which unit (and which of its value objects) the crash hits, built in
// memory or streamed. The next runs must finish with every message in
// exactly one object of its value's folder, and a clean audit.
func TestValueCrashAtEveryStep(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		for _, step := range drain.ValueSteps {
			for _, seed := range []int{1, 2, 3, 4} {
				t.Run(fmt.Sprintf("%s/seed-%d", step, seed), func(t *testing.T) {
					t.Parallel()
					w := w.with(t)
					id := strings.NewReplacer("after-", "a", "before-", "b", "offset-", "o", "state-", "s", "value-", "v", "-", "").Replace(string(step))
					topic := fmt.Sprintf("vcrash-%s-%d", id, seed)
					want := w.produceValues(topic, 2, 100, 6, rand.New(rand.NewPCG(uint64(seed), 7)))
					cfg := w.config(valueSettings(w, topic, topic, "json_lines"))
					crash := crashAtNth(step, seed)
					keep := int64(0)
					if seed%2 == 0 {
						keep = 700 // units are re-read and streamed
					}
					_, err := w.sink(cfg, app.Options{Hooks: crashAt(crash.hook), KeepLimit: keep}).Run(context.Background())
					if !crash.crashed.Load() {
						t.Fatalf("the hook never fired at %s (hits %d); the run returned %v", step, crash.hits.Load(), err)
					}
					if !errors.Is(err, drain.ErrCrash) {
						t.Fatalf("crashed run returned %v, want ErrCrash", err)
					}
					healthy := w.sink(cfg, app.Options{KeepLimit: keep})
					w.drainUntilQuiet(healthy, topic, 20)
					w.checkValues(healthy, topic, "json_lines", want)
					w.auditClean(healthy)
				})
			}
		}
	})
}

// TestAuditReportsAMissingValueObject deletes one value object of a unit
// on purpose: the audit fails the partition and names the object, its
// records and the offsets it held; the other partition stays clean.
func TestAuditReportsAMissingValueObject(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := "values-audit"
		want := w.produceValues(topic, 2, 60, 4, rand.New(rand.NewPCG(3, 3)))
		s := w.sink(w.config(valueSettings(w, topic, topic, "json_lines")), app.Options{})
		w.drainUntilQuiet(s, topic, 20)
		w.checkValues(s, topic, "json_lines", want)
		var victim fields.ValueObject
		err := s.Objects.List(context.Background(), "archive/", func(key string, _ int64) error {
			n, ok := keys.ParseName(key)
			if !ok || !n.Manifest || n.Partition != 1 || victim.Key != "" {
				return nil
			}
			body, err := s.Objects.Get(context.Background(), key)
			if err != nil {
				return err
			}
			m, err := fields.ParseManifest(body)
			if err != nil {
				return err
			}
			victim = m.Objects[len(m.Objects)-1]
			return nil
		})
		if err != nil || victim.Key == "" {
			t.Fatalf("no unit of partition 1 found: %v", err)
		}
		if err := s.Objects.Delete(context.Background(), victim.Key); err != nil {
			t.Fatal(err)
		}
		reports, err := ops.NewAuditor(s, slog.New(slog.DiscardHandler)).Audit(context.Background(), ops.AuditOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			switch {
			case r.Partition == 0 && !r.OK():
				t.Errorf("partition 0 fails the audit: %+v", r)
			case r.Partition == 1 && r.OK():
				t.Errorf("partition 1 passes the audit without %s", victim.Key)
			case r.Partition == 1:
				wantText := fmt.Sprintf("%s is missing: %d records of offsets %d..%d", victim.Key, victim.Records, victim.First, victim.Last)
				if len(r.ValueViolations) != 1 || !strings.Contains(r.ValueViolations[0], wantText) {
					t.Errorf("the audit says %q, want one violation saying %q", r.ValueViolations, wantText)
				}
			}
		}
	})
}

// TestThousandValues drains messages of 1,500 values with
// max_partition_values 1000: every unit ends at its 1,000th value (before
// the count limit), every message is in exactly one object of its value's
// folder, and the audit is clean.
func TestThousandValues(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := "values-1000"
		w.produce(topic, 2, 0, 0)
		want := make([][]string, 2)
		for p := 0; p < 2; p++ {
			for i := 0; i < 2500; i++ {
				v := fmt.Sprintf("c%d", (i*7+p)%1500) // the first 1,500 of each partition are distinct
				w.appendRaw(topic, uint32(p), fmt.Appendf(nil, `{"n":%d,"country":%q}`, i, v), nil)
				want[p] = append(want[p], v)
			}
		}
		set := valueSettings(w, topic, topic, "json_lines")
		set["SINK_MAX_MESSAGES_PER_FILE"] = "2000"
		set["SINK_BATCH_LENGTH"] = "500"
		set["SINK_MAX_PARTITION_VALUES"] = "1000"
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, topic, 20)
		w.checkValues(s, topic, "json_lines", want)
		reports := w.auditClean(s)
		units, objects := 0, 0
		for _, r := range reports {
			units += r.Objects
		}
		err := s.Objects.List(context.Background(), "archive/", func(key string, _ int64) error {
			if n, ok := keys.ParseName(key); ok && !n.Gap && !n.Manifest && !n.Void {
				objects++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if objects != 5000 || units != 6 {
			t.Fatalf("%d value objects in %d units, want 5,000 in 6 (1,000 + 1,000 + 500 per partition: cut at 1,000 values)", objects, units)
		}
		t.Logf("%d messages in %d units of %d value objects", 5000, units, objects)
	})
}

// writtenUnits records the units a run reports (drain.ObjectHook).
type writtenUnits struct {
	mu    sync.Mutex
	units []drain.Written
}

func (w *writtenUnits) OnObject(_ batch.Partition, o drain.Written) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.units = append(w.units, o)
}

// TestWrittenUnitsNameTheirValueObjects: what a run reports of each unit
// (what the table step registers) names that unit's own value objects, for
// every unit of the run, after the run — not a later unit's.
func TestWrittenUnitsNameTheirValueObjects(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		topic := "values-written"
		w.produceValues(topic, 2, 200, 8, rand.New(rand.NewPCG(9, 9)))
		rec := &writtenUnits{}
		s := w.sink(w.config(valueSettings(w, topic, topic, "json_lines")), app.Options{Hooks: []drain.Hook{rec}})
		if _, err := s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(rec.units) < 4 {
			t.Fatalf("the run wrote %d units, want several per partition", len(rec.units))
		}
		for _, u := range rec.units {
			if len(u.Values) == 0 {
				t.Fatalf("unit %s names no value objects", u.Key)
			}
			for _, k := range u.Values {
				n, ok := keys.ParseName(k)
				if !ok || n.First != u.First || n.Last != u.Last || n.Manifest {
					t.Fatalf("unit %s (offsets %d..%d) names %s, not one of its value objects", u.Key, u.First, u.Last, k)
				}
			}
		}
	})
}

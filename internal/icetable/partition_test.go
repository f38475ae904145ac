package icetable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable"
)

// TestTimePartition: a table is partitioned by hour(timestamp); files of
// one hour are registered with that hour as their partition value, a file
// that spans two hours (archived before tables were on) under the table's
// unpartitioned spec, and a scan filtered on time reads exactly the rows
// of that time, skipping the files of other hours.
func TestTimePartition(t *testing.T) {
	l := newLake(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 16, 13, 0, 0, 0, time.UTC)
	at := func(d time.Duration) uint64 { return uint64(base.Add(d).UnixMicro()) }
	// Offsets 0..99 at 13:10 + off s, 100..199 from 13:59:00 to 14:00:39
	// (spanning two hours), 200..299 at 14:30 + off s.
	ts := func(off uint64) uint64 {
		switch {
		case off < 100:
			return at(10*time.Minute + time.Duration(off)*time.Second)
		case off < 200:
			return at(59*time.Minute + time.Duration(off-100)*time.Second)
		}
		return at(90*time.Minute + time.Duration(off-200)*time.Second)
	}
	var items []icetable.Item
	for _, r := range [][2]uint64{{0, 99}, {100, 199}, {200, 299}} {
		items = append(items, l.archiveAt(t, 0, r[0], r[1], false, ts))
	}
	reg := l.registrar(l.catalog(t, nil))
	reg.Partition = "hour"
	id := icetable.PartitionID{Stream: "app", Topic: "logs", Partition: 0}
	// Two commits: the spec is added by the first, used by the second.
	if _, err := reg.Register(ctx, map[icetable.PartitionID]icetable.Target{id: {Through: icetable.Position{Last: 199}, Items: items[:2]}}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(ctx, map[icetable.PartitionID]icetable.Target{id: {Through: icetable.Position{Last: 299}, Items: items[2:]}}); err != nil {
		t.Fatal(err)
	}

	s := l.read(t, "partition_id,offset,k,n")
	checkOnce(t, s, map[uint32]uint64{0: 299})
	if len(s.Spec) != 1 || s.Spec[0].Transform != "hour" || s.Spec[0].Source != icetable.TimestampColumn || s.Spec[0].Name != "timestamp_hour" {
		t.Fatalf("spec %+v, want one field timestamp_hour = hour(timestamp)", s.Spec)
	}
	hours := func(h int) string { return fmt.Sprint(base.Add(time.Duration(h)*time.Hour).Unix() / 3600) }
	want := map[string]string{ // file -> partition value (hours since the epoch), "" for unpartitioned
		"00000000000000000000-00000000000000000099": hours(0),
		"00000000000000000100-00000000000000000199": "",
		"00000000000000000200-00000000000000000299": hours(1),
	}
	if len(s.FilePartitions) != len(want) {
		t.Fatalf("%d data files, want %d", len(s.FilePartitions), len(want))
	}
	for _, f := range s.FilePartitions {
		name := f.Path[strings.LastIndex(f.Path, "/")+1:]
		name = strings.TrimSuffix(name[strings.Index(name, "-")+1:], ".parquet")
		w, ok := want[name]
		if !ok {
			t.Fatalf("unexpected data file %s", f.Path)
		}
		got := ""
		if len(f.Partition) == 1 {
			got = fmt.Sprint(f.Partition[0].(json.Number))
		}
		if got != w || (w == "") != (len(f.Partition) == 0) {
			t.Errorf("%s: spec %d, partition %v; want partition %q", name, f.SpecID, f.Partition, w)
		}
	}

	// A scan of 14:30 on reads offsets 200..299 and skips the 13:00 file.
	from := base.Add(90 * time.Minute).Format("2006-01-02T15:04:05+00:00")
	f := l.read(t, "partition_id,offset", fmt.Sprintf("timestamp >= '%s'", from))
	if len(f.Rows) != 100 {
		t.Fatalf("the scan from %s read %d rows, want 100", from, len(f.Rows))
	}
	for _, r := range f.Rows {
		if off, _ := r[1].(json.Number).Int64(); off < 200 {
			t.Fatalf("the scan from %s read offset %d", from, off)
		}
	}
	for _, p := range f.Planned {
		if strings.Contains(p, "-00000000000000000000-") {
			t.Fatalf("the scan from %s planned %s, of 13:00", from, p)
		}
	}
}

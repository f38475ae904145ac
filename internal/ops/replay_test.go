package ops

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
)

// TestReplayRequestOptions: a Lambda's replay payload becomes the
// options, and a bad one is refused naming the field and what it takes.
func TestReplayRequestOptions(t *testing.T) {
	for _, tc := range []struct {
		payload, err string
		check        func(ReplayOptions) bool
	}{
		{`{"to_topic":"r","since":"2026-11-01T00:00:00Z","partitions":[0,2],"from_offset":5}`, "", func(o ReplayOptions) bool {
			return o.ToTopic == "r" && o.Since.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) && len(o.Partitions) == 2 &&
				*o.FromOffset == 5 && o.Parallel == DefaultReplayParallel
		}},
		{`{"until":"yesterday"}`, `replay until "yesterday": want an RFC 3339 time`, nil},
		{`{"from_offset":9,"to_offset":3}`, "replay from offset 9 is after to offset 3", nil},
		{`{"parallel":-2}`, "replay parallel -2: want at least 1", nil},
	} {
		var r ReplayRequest
		if err := json.Unmarshal([]byte(tc.payload), &r); err != nil {
			t.Fatal(err)
		}
		o, err := r.Options()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.payload, err, tc.err)
		case tc.err == "" && (err != nil || !tc.check(o)):
			t.Errorf("%s: %+v, %v", tc.payload, o, err)
		}
	}
}

// TestPickGeneration: the newest generation of any partition is replayed,
// and a partition archived only under another one is named, not dropped
// in silence.
func TestPickGeneration(t *testing.T) {
	rep := func(p, gen uint32) audit.Report {
		return audit.Report{Stream: "s", Topic: "t", Partition: p, Generation: gen, Objects: 1,
			Ranges: []audit.Range{{First: 0, Last: 9, Key: fmt.Sprintf("k-%d-%d", p, gen)}}}
	}
	reports := []audit.Report{rep(0, 0), rep(0, 1), rep(1, 1), rep(2, 0), {Partition: 3, Generation: 1}}
	gen, plans, leftOut, err := pickGeneration(reports, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gen != 1 || len(plans) != 2 || plans[0].Partition != 0 || plans[1].Partition != 1 {
		t.Fatalf("generation %d, plans %+v; want generation 1 for partitions 0 and 1", gen, plans)
	}
	if len(leftOut) != 1 || !strings.Contains(leftOut[0], "partition 2: generation [0] only") || !strings.Contains(leftOut[0], "-generation 0") {
		t.Fatalf("left out %q; want partition 2 named with -generation 0", leftOut)
	}
	zero := uint32(0)
	gen, plans, leftOut, _ = pickGeneration(reports, &zero)
	if gen != 0 || len(plans) != 2 || len(leftOut) != 1 || !strings.Contains(leftOut[0], "partition 1") {
		t.Fatalf("-generation 0: generation %d, %d plans, left out %q", gen, len(plans), leftOut)
	}
}

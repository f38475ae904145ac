package ops

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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

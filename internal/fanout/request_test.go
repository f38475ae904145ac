package fanout

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cohort := `{"id":"c1","workers":3,"anchors":[{"stream":"s","topic":"t","group":"g","member":0}],"not_after":"2026-01-01T00:00:05Z","settle_by":"2026-01-01T00:00:07Z"}`
	tests := []struct {
		name    string
		payload string
		mode    Mode
		err     string
	}{
		{"empty", ``, ModeDrain, ""},
		{"null", `null`, ModeDrain, ""},
		{"scheduled event", `{"version":"0","detail-type":"Scheduled Event","source":"aws.events","detail":{}}`, ModeDrain, ""},
		{"empty object", `{}`, ModeDrain, ""},
		{"not an object", `[1,2]`, ModeDrain, ""},
		{"not JSON", `hello`, ModeDrain, ""},
		{"drain", `{"mode":"drain"}`, ModeDrain, ""},
		{"audit", `{"mode":"audit"}`, ModeAudit, ""},
		{"worker", `{"mode":"worker","cohort":` + cohort + `}`, ModeWorker, ""},
		{"worker without cohort", `{"mode":"worker"}`, "", "no cohort"},
		{"worker without anchors", `{"mode":"worker","cohort":{"id":"x","workers":2,"not_after":"2026-01-01T00:00:00Z","settle_by":"2026-01-01T00:00:00Z"}}`, "", "no anchors"},
		{"worker with 0 workers", `{"mode":"worker","cohort":{"id":"x","workers":0}}`, "", "below 1"},
		{"unknown mode", `{"mode":"sweep"}`, "", `mode "sweep" is not one of drain, worker, audit`},
		{"mode of the wrong type", `{"mode":7}`, "", "mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.payload))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || r.Mode != tc.mode {
				t.Fatalf("Parse = %+v, %v; want mode %q", r, err, tc.mode)
			}
			if (r.Cohort != nil) != (tc.mode == ModeWorker) {
				t.Fatalf("cohort = %+v for mode %q", r.Cohort, r.Mode)
			}
		})
	}
}

// TestWorkerPayloadRoundTrip: what a coordinator sends is what a worker reads.
func TestWorkerPayloadRoundTrip(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	in := Request{Mode: ModeWorker, Cohort: &Cohort{ID: "req-1", Workers: 3,
		Anchors:  []Anchored{{Stream: "app", Topic: "logs", Group: "g", Member: 4}},
		NotAfter: now.Add(5 * time.Second), SettleBy: now.Add(7 * time.Second)}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := out.Cohort.anchor("app", "logs", "g"); !ok || id != 4 || !out.Cohort.NotAfter.Equal(in.Cohort.NotAfter) || out.Cohort.Workers != 3 {
		t.Fatalf("round trip: %s -> %+v", b, out.Cohort)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"mode":"audit"}`, `{"mode":"worker","cohort":{"workers":2}}`, `{"mode":null}`, `{"mode":"worker","cohort":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, err := Parse(payload)
		if err != nil {
			return
		}
		switch r.Mode {
		case ModeDrain, ModeAudit:
			if r.Cohort != nil {
				t.Fatalf("mode %q with a cohort", r.Mode)
			}
		case ModeWorker:
			if r.Cohort == nil || r.Cohort.Workers < 1 || len(r.Cohort.Anchors) == 0 {
				t.Fatalf("worker request accepted without a usable cohort: %+v", r.Cohort)
			}
		default:
			t.Fatalf("accepted unknown mode %q", r.Mode)
		}
	})
}

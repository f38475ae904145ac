package state

import (
	"strings"
	"testing"
)

func TestKeyID(t *testing.T) {
	tests := []struct {
		key  Key
		want string
	}{
		{Key{Group: "sink", Stream: "orders", Topic: "events", Partition: 1}, "sink/orders/events/1"},
		{Key{Group: "a/b", Stream: "c", Topic: "d", Partition: 0}, "a%2Fb/c/d/0"},
		{Key{Group: "a", Stream: "b/c", Topic: "d", Partition: 0}, "a/b%2Fc/d/0"},
		{Key{Group: "100%", Stream: "%2F", Topic: "t", Partition: 4294967295}, "100%25/%252F/t/4294967295"},
		{Key{Group: "ünï", Stream: "s p", Topic: "t#1", Partition: 7}, "ünï/s p/t#1/7"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.key.ID(); got != tc.want {
				t.Fatalf("ID() = %q, want %q", got, tc.want)
			}
			back, err := ParseKeyID(tc.want)
			if err != nil || back != tc.key {
				t.Fatalf("ParseKeyID(%q) = %+v, %v; want %+v", tc.want, back, err, tc.key)
			}
		})
	}
}

func TestParseKeyIDErrors(t *testing.T) {
	tests := []struct{ id, wantMsg string }{
		{"a/b/c", "got 3 fields"},
		{"a/b/c/d/1", "got 5 fields"},
		{"a/b/c/x", `partition "x" is not a canonical uint32`},
		{"a/b/c/01", `partition "01" is not a canonical uint32`},
		{"a/b/c/4294967296", "not a canonical uint32"},
		{"a/b/c/-1", "not a canonical uint32"},
		{"a%2f/b/c/1", "bad escape at byte 1"},
		{"a/b%/c/1", "field 2: bad escape"},
		{"a/b/c%41/1", "field 3: bad escape"},
		{"/b/c/1", "group name is empty"},
		{"a//c/1", "stream name is empty"},
		{"a/b/\xff/1", "topic name is not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			_, err := ParseKeyID(tc.id)
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("ParseKeyID(%q) err = %v, want one containing %q", tc.id, err, tc.wantMsg)
			}
		})
	}
}

// FuzzParseKeyID checks that accepted IDs are canonical: they print back unchanged.
func FuzzParseKeyID(f *testing.F) {
	for _, s := range []string{"sink/orders/events/1", "a%2Fb/c/d/0", "100%25/%252F/t/42", "a/b/c", "a/b/c/01", "%/%/%/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		k, err := ParseKeyID(id)
		if err != nil {
			return
		}
		if got := k.ID(); got != id {
			t.Fatalf("ParseKeyID(%q) = %+v, whose ID is %q", id, k, got)
		}
	})
}

// FuzzKeyID checks that every valid key survives ID and ParseKeyID, so no two keys share an ID.
func FuzzKeyID(f *testing.F) {
	f.Add("sink", "orders", "events", uint32(1))
	f.Add("a/b", "%2F", "c%", uint32(0))
	f.Fuzz(func(t *testing.T, group, stream, topic string, partition uint32) {
		k := Key{Group: group, Stream: stream, Topic: topic, Partition: partition}
		if k.Validate() != nil {
			return
		}
		back, err := ParseKeyID(k.ID())
		if err != nil || back != k {
			t.Fatalf("ParseKeyID(%q) = %+v, %v; want %+v", k.ID(), back, err, k)
		}
	})
}

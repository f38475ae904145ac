package icetable

import (
	"strconv"
	"testing"
)

func TestParseSnapshotRef(t *testing.T) {
	for _, c := range []struct {
		in      string
		id      string
		seq     int64
		wantErr bool
	}{
		{"123/4", "123", 4, false},
		{"-5/1", "-5", 1, false}, // snapshot ids are signed 64-bit
		{"/0", "", 0, false},     // a table without snapshots
		{"", "", 0, true},
		{"123", "", 0, true},
		{"x/1", "", 0, true},
		{"1/x", "", 0, true},
		{"1/-1", "", 0, true},
	} {
		id, seq, err := parseSnapshotRef(c.in)
		if (err != nil) != c.wantErr || id != c.id || seq != c.seq {
			t.Errorf("parseSnapshotRef(%q) = %q, %d, %v", c.in, id, seq, err)
		}
	}
}

func FuzzParseSnapshotRef(f *testing.F) {
	for _, s := range []string{"123/4", "/0", "", "1/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, seq, err := parseSnapshotRef(s)
		if err != nil {
			return
		}
		if seq < 0 {
			t.Fatalf("%q: sequence %d", s, seq)
		}
		if again, aseq, err := parseSnapshotRef(id + "/" + strconv.FormatInt(seq, 10)); err != nil || again != id || aseq != seq {
			t.Fatalf("%q does not read back: %q %d %v", s, again, aseq, err)
		}
	})
}

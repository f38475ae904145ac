package parquet

import (
	"bytes"
	"testing"
)

// TestStatsColumns: a column named in StatsColumns carries its string min
// and max in every chunk's statistics (what a table partitioned by it
// reads its one value from), over several files of one encoder (whose
// columns are reused); the other string columns carry none, so their files'
// bytes are as they were.
func TestStatsColumns(t *testing.T) {
	enc, err := NewEncoder(Options{Payload: PayloadJSON, IncludeMetadata: true, StatsColumns: []string{"country", "user.tier"}})
	if err != nil {
		t.Fatal(err)
	}
	files := [][]string{{"DE", "DE"}, {"FR"}, {"b", "a", "c"}}
	for i, values := range files {
		var recs []oracleRecord
		for j, v := range values {
			recs = append(recs, oracleRecord{offset: uint64(j), timestamp: 1, payload: []byte(`{"pad":"x","country":"` + v + `","user":{"tier":"t` + v + `"}}`)})
		}
		file, _ := encodeAll(t, enc, Source{Stream: "s", Topic: "t"}, recs)
		f, err := readFooter(file)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := values[0], values[0]
		for _, v := range values {
			lo, hi = min(lo, v), max(hi, v)
		}
		for _, c := range f.groups[0][1].list {
			cm := c.fields[3].fields
			st, path := cm[12].fields, pathOf(cm)
			_, hasMin := st[6]
			switch path {
			case "country", "user.tier":
				prefix := ""
				if path == "user.tier" {
					prefix = "t"
				}
				if !bytes.Equal(st[6].b, []byte(prefix+lo)) || !bytes.Equal(st[5].b, []byte(prefix+hi)) {
					t.Errorf("file %d column %s: min %q max %q, want %q %q", i, path, st[6].b, st[5].b, prefix+lo, prefix+hi)
				}
			case "pad", "stream", "topic":
				if hasMin {
					t.Errorf("file %d column %s has a min, which only StatsColumns have", i, path)
				}
			}
		}
	}
}

package config

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLoadSeed measures a cold-start configuration load (file + env + validation).
func BenchmarkLoadSeed(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "upstream_seed.toml"))
	if err != nil {
		b.Fatal(err)
	}
	env := envOf(map[string]string{"IGGY_PASSWORD": "p", "SINK_MAX_FILE_AGE": "1m"})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := load(data, true, "seed", env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseByteSize(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseByteSize("1.5 MiB"); err != nil {
			b.Fatal(err)
		}
	}
}

package keys

import (
	"fmt"
	"testing"
)

// BenchmarkAppendObjectKey is compared against fmt.Sprintf building the same key.
func BenchmarkAppendObjectKey(b *testing.B) {
	tpl := mustParse(b, "{stream}/{topic}/{date}/{hour}")
	pn := NewNamer("iggy/raw", tpl, "jsonl").Partition("app_logs", "api_requests", 1)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = pn.AppendObject(buf[:0], 0, 99, upstreamTS)
	}
}

func BenchmarkSprintfKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = fmt.Sprintf("%s/%s/%s/%s/%s/%05d-%020d-%020d.%s", "iggy/raw", "app_logs", "api_requests", "2024-03-16", "14", 1, 0, 99, "jsonl")
	}
}

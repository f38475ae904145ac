package app

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

func TestMemoryBudget(t *testing.T) {
	const mib = 1 << 20
	const poll = 16*mib + 64<<10 // max_poll_bytes and a reply's margin
	tests := []struct {
		name string
		env  map[string]string
		want int64
	}{
		{"defaults: 8MiB objects in memory, 4 partitions + 1, polls of 16MiB", nil, 5*(8*mib+64<<10) + 4*poll + 32*mib},
		{"large objects stream in two 8MiB parts", map[string]string{"SINK_MAX_FILE_SIZE": "256MiB"}, 5*(16*mib+64<<10) + 4*poll + 32*mib},
		{"messages rotation builds up to the multipart threshold", map[string]string{"SINK_FILE_ROTATION": "messages", "SINK_MAX_MESSAGES_PER_FILE": "10", "SINK_PARTITION_CONCURRENCY": "1"}, 2*(16*mib+64<<10) + poll + 32*mib},
		{"small objects, small polls", map[string]string{"SINK_MAX_FILE_SIZE": "1MiB", "SINK_MAX_POLL_BYTES": "1MiB"}, 5*(1*mib+64<<10) + 4*(1*mib+64<<10) + 32*mib},
		{"large parts dominate streamed objects", map[string]string{"SINK_MAX_FILE_SIZE": "1GiB", "SINK_PART_SIZE": "64MiB"}, 5*(128*mib) + 4*poll + 32*mib},
		{"compression keeps a compressed copy", map[string]string{"SINK_COMPRESSION": "zstd"}, 5*((8*mib+64<<10)*3/2) + 4*poll + 48*mib},
		{"parquet in memory: the messages and the file", map[string]string{"SINK_OUTPUT_FORMAT": "parquet"}, 5*(8*mib+64<<10+8*mib/3) + 4*poll + 32*mib},
		{"parquet streamed: the parts and one row group", map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_MAX_FILE_SIZE": "1GiB", "SINK_PARQUET_ROW_GROUP_SIZE": "96MiB", "SINK_PARQUET_COMPRESSION": "none"},
			5*(16*mib+64<<10+96*mib) + 4*poll + 32*mib},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, err := config.Load("", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			if got := MemoryBudget(cfg); got != tc.want {
				t.Fatalf("MemoryBudget = %d MiB, want %d MiB", got/mib, tc.want/mib)
			}
		})
	}
}

package app

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// MemoryBudget is what a run needs: for each partition drained at once,
// plus the one allowed to read ahead while it uploads, either an object
// built in memory (up to multipart_threshold, and its compressed copy) or the
// two part buffers of a streamed upload; one poll batch per partition
// (max_poll_bytes and a reply's margin: polls adapt their count to the
// largest message, so this holds whatever the messages' size); and a base
// for the Iggy client,
// the compressors and the runtime. A Parquet object also needs the file
// written from the kept messages, or, streamed, one row group's column
// chunks: counted at a third of their input when compressed (JSON logs
// shrink 5–10×), all of it under parquet_compression = "none".
func MemoryBudget(cfg *config.Config) int64 {
	p := &cfg.Plugin
	var perPartition int64
	if b := p.MaxObjectBytes(); b > 0 && b <= p.MultipartThreshold {
		perPartition = b + 64<<10 // every object is built in memory
	} else {
		perPartition = max(p.MultipartThreshold+64<<10, 2*p.PartSize)
	}
	if p.Parquet() {
		file := p.MaxFileSize
		if b := p.MaxObjectBytes(); b == 0 || b > p.MultipartThreshold {
			file = min(p.ParquetRowGroupSize, max(p.MultipartThreshold, p.MaxFileSize)) // streamed: one row group
		}
		if p.ParquetCompressed() {
			file /= 3
		}
		perPartition += file
	}
	base := int64(32 << 20)
	if p.Compressed() {
		perPartition += perPartition / 2 // the compressed copy, for JSON well under half
		base += 16 << 20                 // encoder windows
	}
	poll := p.MaxPollBytes + PollReplyMargin
	conc := int64(p.PartitionConcurrency)
	return (conc+1)*perPartition + conc*poll + base
}

// PollReplyMargin is what a poll reply may hold beyond max_poll_bytes: the
// reply's own headers, and the frame of one message of max_poll_bytes.
const PollReplyMargin = 64 << 10

// ApplyMemoryLimit sets the Go runtime's soft memory limit to the run's
// budget, so that the garbage collector keeps the process near what it
// needs instead of twice its live heap; GOMEMLIMIT, when set, wins. In a
// Lambda the limit never exceeds 90% of the function's memory, and a
// warning says when that is less than the budget.
func ApplyMemoryLimit(cfg *config.Config, log *slog.Logger) {
	limit := MemoryBudget(cfg)
	if mb, err := strconv.Atoi(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")); err == nil && mb > 0 {
		if ceiling := int64(mb) << 20 * 9 / 10; ceiling < limit {
			log.Warn("the function's memory is tight for this configuration; raise MemorySize or lower partition_concurrency / max_file_size",
				"memory_mb", mb, "budget_mb", limit>>20)
			limit = ceiling
		}
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(limit)
}

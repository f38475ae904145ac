package sink

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// MemoryBudget is what a run needs at most: for each partition drained at
// once, plus the one allowed to read ahead while it uploads, either an
// object built in memory (up to multipart_threshold) or the two part buffers
// of a streamed upload; and a base for the Iggy client, poll batches and the
// runtime.
func MemoryBudget(cfg *config.Config) int64 {
	p := &cfg.Plugin
	var perPartition int64
	if p.FileRotation != "messages" && p.MaxFileSize <= p.MultipartThreshold {
		perPartition = p.MaxFileSize + 64<<10 // every object is built in memory
	} else {
		perPartition = max(p.MultipartThreshold+64<<10, 2*p.PartSize)
	}
	const base = 32 << 20
	return int64(p.PartitionConcurrency+1)*perPartition + base
}

// ApplyMemoryLimit sets the Go runtime's soft memory limit to the run's
// budget, so that the garbage collector keeps the process near what it
// needs instead of twice its live heap; GOMEMLIMIT, when set, wins. In a
// Lambda it warns when the function's memory is below the budget.
func ApplyMemoryLimit(cfg *config.Config, log *slog.Logger) {
	budget := MemoryBudget(cfg)
	if mb, err := strconv.Atoi(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")); err == nil && int64(mb)<<20 < budget+budget/4 {
		log.Warn("the function's memory is tight for this configuration; raise MemorySize or lower partition_concurrency / max_file_size",
			"memory_mb", mb, "budget_mb", budget>>20)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(budget)
}

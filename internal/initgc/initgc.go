// Package initgc holds the garbage collector back while package
// initialisers run, and gives it back to main.
//
// The Iceberg library builds a large function catalogue in package
// variables (tens of megabytes, nearly all of it live), so at the default
// GOGC the collector runs several times before main starts, marking the
// same heap again each time: on every cold start and every `poller once`,
// whatever the configuration. Both commands import it and call Done first
// in main. Go initialises it before iceberg-go's table/substrait, as soon
// as runtime/debug is; cmd/poller's TestNoCollectionDuringInit checks that
// order and that no collection runs after it.
package initgc

import (
	"os"
	"runtime/debug"
	"strconv"
)

// initHeap bounds the memory while the collector is held back: above what
// the initialisers allocate (about 40 MB), so that none runs, but never
// more than a quarter of a Lambda function's memory (then one runs).
const initHeap = 64 << 20

var (
	held    bool
	percent int
	limit   int64
)

func init() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return // the operator tuned the collector: leave it alone
	}
	bound := int64(initHeap)
	if mb, err := strconv.ParseInt(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), 10, 64); err == nil && mb > 0 {
		bound = min(bound, mb<<20/4)
	}
	held = true
	percent = debug.SetGCPercent(-1)
	limit = debug.SetMemoryLimit(bound)
}

// Done gives the collector back its settings from before initialisation;
// main calls it first. Calling it again does nothing.
func Done() {
	if !held {
		return
	}
	held = false
	debug.SetGCPercent(percent)
	debug.SetMemoryLimit(limit)
}

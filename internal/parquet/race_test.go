//go:build race

package parquet

// raceEnabled: the race detector slows encoding about tenfold and its
// shadow memory distorts heap figures.
const raceEnabled = true

package parquet

// AppendLossyForTest exposes appendLossy to the external tests.
var AppendLossyForTest = appendLossy

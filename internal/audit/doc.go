// Package audit checks the sink's delivery guarantee from the outside: a
// partition's objects must cover consecutive offset ranges, with no overlap
// and no gap that a gap marker does not report, up to the committed offset.
package audit

// Package jsonscan is the JSON scanning the encoders (the JSON formats' and
// Parquet's) and the transforms share, each primitive defined once: token
// scanners (SkipSpace, ScanString, ScanNumber, ScanLiteral) and AppendUnquote;
// a validating, compacting Scanner for a whole document or for one value
// inside a larger text; serde-compatible string quoting; and walks over
// compact, already validated JSON.
package jsonscan

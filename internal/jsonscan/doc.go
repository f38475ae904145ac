// Package jsonscan is the JSON scanning the encoder and the transforms share:
// a validating, compacting scanner, serde-compatible string quoting, and walks over compact JSON.
package jsonscan

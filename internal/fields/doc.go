// Package fields reads the payload fields a path template names
// ({payload.<path>}) and renders each record's folder segments.
package fields

// Package configsource reads the sink's configuration file from a path, S3
// or SSM, and reads it again per invocation only when it changed.
package configsource

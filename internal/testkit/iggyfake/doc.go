// Package iggyfake holds hostile Iggy servers for tests: a frame-level proxy
// that rewrites or withholds replies of a real broker, and scripted servers.
package iggyfake

// Package vsr encodes and decodes Iggy's VSR client protocol (0.11.0 of server 0.9, 0.12.0 of server 0.10):
// 256-byte headers, login, the commands the sink uses, and poll batches, in both directions, with no I/O.
//
// Every decoder bounds-checks what it reads and returns an error wrapping
// ErrMalformed, never a panic; payload and header slices in decoded values
// alias the buffer they were decoded from. Layouts that differ between the
// two protocols take a Dialect. Where the 0.12.0 layouts are not known from
// a released server, the development layout of the 0.12 line is used; every
// such choice is marked "0.12 dev layout" at its one place in this package.
package vsr

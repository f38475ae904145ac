// Package batch turns the messages of one partition into the bytes of one
// object: record encoding, framing, compression and rotation rules.
package batch

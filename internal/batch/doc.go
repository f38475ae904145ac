// Package batch turns the messages of one partition into the bytes of one
// object (JSON Lines, JSON array, raw or Parquet) and of its error object:
// record encoding, framing, compression and rotation rules.
package batch

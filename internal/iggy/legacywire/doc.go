// Package legacywire reads and writes the frames of Iggy 0.8's TCP protocol: a
// request's length, command code and payload, a reply's status, length and payload.
package legacywire

// Package sink assembles the sink from its configuration: AWS clients, the
// state store, the uploader, the Iggy dialer and the transforms, once per process.
package sink

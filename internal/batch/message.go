package batch

// Message is one Iggy message as the sink reads it from a partition.
// The sink owns every slice in it: a source copies payload and header bytes
// out of the client's reply buffer before it hands a Message on.
type Message struct {
	// Offset is the message's offset in its partition, from 0.
	Offset uint64
	// Timestamp is the server's append time in microseconds since the Unix epoch.
	Timestamp uint64
	// Headers holds the user headers in Iggy's wire form: repeated
	// [key_kind:u8][key_len:u32 LE][key][value_kind:u8][value_len:u32 LE][value].
	// Empty when the message has none.
	Headers []byte
	// Payload is the message body as the producer sent it.
	Payload []byte
	// ID is the message's id as the server holds it (a u128, little
	// endian), and OriginTimestamp the producer's time (µs): a replay
	// into Iggy finds what it produced by them.
	ID              [16]byte
	OriginTimestamp uint64
	// prepared: Payload is what Encoder.PayloadJSON made of it (see
	// Prepared), so rendering it skips the scan and the transforms.
	prepared bool
}

// Prepared returns m with payload, what PayloadJSON gave for it (valid,
// compact, transformed JSON), in place of its own: rendered by the same
// Encoder it gives the same record as m, without scanning or transforming
// the payload again.
func Prepared(m *Message, payload []byte) Message {
	p := *m
	p.Payload, p.prepared = payload, true
	return p
}

// Partition names the partition a batch belongs to.
type Partition struct {
	Stream string
	Topic  string
	ID     uint32
}

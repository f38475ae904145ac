package vsr

// ResyncPartition is the partition id of an empty poll reply that tells
// a group member it does not (or no longer) own the partition: Sync again.
const ResyncPartition uint32 = 0xFFFFFFFF

// PollPrefixSize is the size of a poll reply's prefix in dialect d.
func PollPrefixSize(d Dialect) int {
	if d >= V012 {
		return 16 + PartitionContextSize
	}
	return 16
}

// PollReply is a PollMessages reply: its prefix, then batch records.
type PollReply struct {
	PartitionID   uint32
	CurrentOffset uint64
	Count         uint32
	// Context (0.12) is the partition's context at poll time.
	Context PartitionContext
	// Records are the batch records, walked by Messages.
	Records []byte
}

// Resync reports whether r is the sentinel "ownership moved" reply.
func (r *PollReply) Resync() bool { return r.PartitionID == ResyncPartition }

// AppendPollPrefix appends r's prefix; records follow.
func AppendPollPrefix(dst []byte, d Dialect, r *PollReply) []byte {
	dst = le.AppendUint32(dst, r.PartitionID)
	dst = le.AppendUint64(dst, r.CurrentOffset)
	dst = le.AppendUint32(dst, r.Count)
	if d >= V012 {
		dst = appendContext(dst, r.Context)
	}
	return dst
}

// DecodePollReply reads the prefix of a poll reply; Records is the rest.
func DecodePollReply(b []byte, d Dialect) (PollReply, error) {
	r := newDecoder("poll reply", b)
	p := PollReply{PartitionID: r.u32("partition id"), CurrentOffset: r.u64("current offset"), Count: r.u32("messages count")}
	if d >= V012 {
		p.Context = r.context()
	}
	if r.err != nil {
		return p, r.err
	}
	p.Records = b[r.off:]
	if p.Count == 0 && len(p.Records) > 0 {
		return p, malformed("poll reply", "no messages but %d bytes of records", len(p.Records))
	}
	return p, nil
}

// Message is one polled message; slices alias the reply.
type Message struct {
	Offset uint64
	// Timestamp is the server's time (µs): its batch's base timestamp.
	Timestamp uint64
	// OriginTimestamp is the producer's time (µs).
	OriginTimestamp uint64
	ID              U128
	Payload         []byte
	Headers         []byte
}

// Messages walks the records: every batch length within the reply, every
// frame within its batch, the message count matching the prefix and (when
// verify) every message checksum right. Offsets are base_offset +
// offset_delta; they must increase. User headers are passed on as they
// are: the encoder counts malformed ones rather than refusing a message.
func (r *PollReply) Messages(verify bool, fn func(m *Message) error) error {
	var m Message
	var f Frame
	var seen uint32
	var last uint64
	recs := r.Records
	for pos := 0; pos < len(recs); {
		if len(recs)-pos < BatchHeaderSize {
			return malformed("poll reply", "%d bytes left at byte %d, a batch header is %d", len(recs)-pos, pos, BatchHeaderSize)
		}
		h := decodeBatchHeader(recs[pos:])
		if h.Length < BatchHeaderSize || h.Length > uint64(len(recs)-pos) {
			return malformed("poll reply", "batch at byte %d claims %d bytes, %d left", pos, h.Length, len(recs)-pos)
		}
		if uint64(h.Count) > uint64(r.Count-seen) {
			return malformed("poll reply", "batch at byte %d holds %d messages beyond the %d announced", pos, h.Count, r.Count)
		}
		rec := recs[pos : uint64(pos)+h.Length]
		err := walkFrames(rec, h, false, &f, func(f *Frame) error {
			m.Offset = h.BaseOffset + uint64(f.OffsetDelta)
			if seen > 0 && m.Offset <= last {
				return malformed("poll reply", "offset %d after offset %d", m.Offset, last)
			}
			if verify && f.Checksum != FrameChecksum(f.Raw) {
				return &ChecksumError{Index: seen, Got: f.Checksum, Want: FrameChecksum(f.Raw), Offset: m.Offset}
			}
			last = m.Offset
			seen++
			m.Timestamp = h.BaseTimestamp
			m.OriginTimestamp = h.OriginTimestamp + uint64(f.TimestampDelta)
			m.ID, m.Payload, m.Headers = f.ID, f.Payload, f.Headers
			return fn(&m)
		})
		if err != nil {
			return err
		}
		pos += int(h.Length)
	}
	if seen != r.Count {
		return malformed("poll reply", "%d messages announced, %d in the records", r.Count, seen)
	}
	return nil
}

// PollPeek is what the start of a poll reply says about its first message.
type PollPeek struct {
	// Count is the number of messages the reply announces.
	Count uint32
	// Offset and Timestamp are the first message's; Size is its payload and
	// user headers, in bytes.
	Offset, Timestamp, Size uint64
}

// PeekPollReply reads the announced count and the first message's offset,
// time and size from the first bytes of a poll reply's body (a reply too
// large to keep: see PollPeekSize), without the rest of it.
func PeekPollReply(prefix []byte, d Dialect) (PollPeek, error) {
	p, err := DecodePollReply(prefix, d)
	if err != nil {
		return PollPeek{}, err
	}
	recs := p.Records
	if p.Count == 0 || len(recs) < BatchHeaderSize+FrameHeaderSize {
		return PollPeek{}, malformed("poll reply", "%d messages announced, %d bytes of records seen: no first message to read", p.Count, len(recs))
	}
	h := decodeBatchHeader(recs)
	fh := recs[BatchHeaderSize:]
	return PollPeek{
		Count: p.Count, Offset: h.BaseOffset + uint64(le.Uint32(fh[offFrameDelta:])), Timestamp: h.BaseTimestamp,
		Size: uint64(le.Uint32(fh[offFramePayload:])) + uint64(le.Uint32(fh[offFrameHeaders:])),
	}, nil
}

// PollPeekSize is how many bytes of a poll reply's body PeekPollReply needs.
const PollPeekSize = 4 + 8 + 4 + 3*8 + BatchHeaderSize + FrameHeaderSize

package vsr

import (
	"github.com/zeebo/xxh3"
)

// Sizes of a batch record's header and of each message frame's header.
const (
	BatchHeaderSize = 256
	FrameHeaderSize = 48
)

// Batch header field offsets.
const (
	offBatchPartition = 0
	offBatchBase      = 8
	offBatchTimestamp = 16
	offBatchOrigin    = 24
	offBatchLength    = 32
	offBatchChecksum  = 40
	offBatchCount     = 48
	offBatchReserved  = 52
	// 0.12: an idempotent producer's section at 52..72.
	offBatchProducerFlags = 52
	offBatchProducerID    = 56
	offBatchEpoch         = 64
	offBatchSequence      = 68
	offBatchReserved012   = 72
)

// Frame header field offsets.
const (
	offFrameID       = 8
	offFrameDelta    = 24
	offFrameTSDelta  = 28
	offFrameHeaders  = 32
	offFramePayload  = 36
	offFrameReserved = 40
)

// BatchHeader is the 256-byte header of a batch record.
type BatchHeader struct {
	PartitionID uint64
	BaseOffset  uint64
	// BaseTimestamp is the server's time (µs) of every frame in the batch.
	BaseTimestamp uint64
	// OriginTimestamp is the producer's earliest time (µs) in the batch.
	OriginTimestamp uint64
	Length          uint64
	Checksum        uint64
	Count           uint32
}

func decodeBatchHeader(b []byte) BatchHeader {
	return BatchHeader{
		PartitionID: le.Uint64(b[offBatchPartition:]), BaseOffset: le.Uint64(b[offBatchBase:]),
		BaseTimestamp: le.Uint64(b[offBatchTimestamp:]), OriginTimestamp: le.Uint64(b[offBatchOrigin:]),
		Length: le.Uint64(b[offBatchLength:]), Checksum: le.Uint64(b[offBatchChecksum:]), Count: le.Uint32(b[offBatchCount:]),
	}
}

// BeginBatch appends a batch header with h's partition, offsets and
// timestamps; frames follow (AppendFrame), then SealBatch fills in the
// length, count and checksum.
func BeginBatch(dst []byte, h BatchHeader) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	b := dst[start:]
	le.PutUint64(b[offBatchPartition:], h.PartitionID)
	le.PutUint64(b[offBatchBase:], h.BaseOffset)
	le.PutUint64(b[offBatchTimestamp:], h.BaseTimestamp)
	le.PutUint64(b[offBatchOrigin:], h.OriginTimestamp)
	return dst
}

// AppendFrame appends one message frame (header, payload, then user
// headers) with its checksum.
func AppendFrame(dst []byte, id U128, offsetDelta, timestampDelta uint32, payload, headers []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, FrameHeaderSize)...)
	f := dst[start:]
	copy(f[offFrameID:], id[:])
	le.PutUint32(f[offFrameDelta:], offsetDelta)
	le.PutUint32(f[offFrameTSDelta:], timestampDelta)
	le.PutUint32(f[offFrameHeaders:], uint32(len(headers)))
	le.PutUint32(f[offFramePayload:], uint32(len(payload)))
	dst = append(dst, payload...)
	dst = append(dst, headers...)
	le.PutUint64(dst[start:], FrameChecksum(dst[start:]))
	return dst
}

// FrameChecksum is a frame's checksum: XXH3-64 of everything after its
// checksum field (header rest, payload, user headers).
func FrameChecksum(frame []byte) uint64 { return xxh3.Hash(frame[8:]) }

// SealBatch completes the batch record that starts at batch[0]: the
// frames after its header are counted, its length set and its checksum
// computed. The frames must be well-formed (AppendFrame).
func SealBatch(batch []byte) []byte {
	var count uint32
	for pos := BatchHeaderSize; pos < len(batch); count++ {
		pos += frameLen(batch[pos:])
	}
	le.PutUint64(batch[offBatchLength:], uint64(len(batch)))
	le.PutUint32(batch[offBatchCount:], count)
	le.PutUint64(batch[offBatchChecksum:], batchChecksum(batch))
	return batch
}

func frameLen(f []byte) int {
	return FrameHeaderSize + int(le.Uint32(f[offFramePayload:])) + int(le.Uint32(f[offFrameHeaders:]))
}

// batchChecksum is XXH3-64 over the header's partition, offsets,
// timestamps and length, its count, (0.12, when the batch has a producer)
// the producer's flag byte, id, epoch and sequence, then every frame's
// checksum bytes.
func batchChecksum(batch []byte) uint64 {
	var h xxh3.Hasher
	h.Write(batch[offBatchPartition:offBatchChecksum])
	h.Write(batch[offBatchCount:offBatchReserved])
	if batch[offBatchProducerFlags] == 1 {
		h.Write([]byte{1})
		h.Write(batch[offBatchProducerID : offBatchProducerID+8])
		h.Write(batch[offBatchEpoch : offBatchEpoch+2])
		h.Write(batch[offBatchSequence : offBatchSequence+4])
	}
	for pos := BatchHeaderSize; pos < len(batch); pos += frameLen(batch[pos:]) {
		h.Write(batch[pos : pos+8])
	}
	return h.Sum64()
}

// CheckBatch checks one batch record as a producer sends it: header
// length within the bytes, reserved bytes zero (0.12: but for a producer
// section), frames exactly filling it, header lengths and frame checksums
// right. It returns the header.
func CheckBatch(b []byte, d Dialect) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, malformed("batch", "%d bytes, the header alone is %d", len(b), BatchHeaderSize)
	}
	h := decodeBatchHeader(b)
	if h.Length < BatchHeaderSize || h.Length > uint64(len(b)) {
		return h, malformed("batch", "length %d outside %d..%d", h.Length, BatchHeaderSize, len(b))
	}
	if err := checkReserved(b, d); err != nil {
		return h, err
	}
	rec := b[:h.Length]
	var n uint32
	err := walkFrames(rec, h, true, new(Frame), func(*Frame) error { n++; return nil })
	if err != nil {
		return h, err
	}
	if n == 0 {
		return h, malformed("batch", "no messages")
	}
	if h.Checksum != 0 && h.Checksum != batchChecksum(rec) {
		return h, malformed("batch", "checksum %#x does not match its frames", h.Checksum)
	}
	return h, nil
}

// BatchFrames walks the frames of one batch record, as a server does with a
// batch CheckBatch accepted: fn sees each frame in order (slices alias rec,
// the Frame is reused between calls). Checksums are not verified here.
func BatchFrames(rec []byte, fn func(f *Frame) error) error {
	if len(rec) < BatchHeaderSize {
		return malformed("batch", "%d bytes, the header alone is %d", len(rec), BatchHeaderSize)
	}
	h := decodeBatchHeader(rec)
	if h.Length != uint64(len(rec)) {
		return malformed("batch", "length %d, record of %d bytes", h.Length, len(rec))
	}
	return walkFrames(rec, h, false, new(Frame), fn)
}

// Frame is one message frame of a batch record; slices alias the record.
type Frame struct {
	Checksum       uint64
	ID             U128
	OffsetDelta    uint32
	TimestampDelta uint32
	Payload        []byte
	Headers        []byte
	// Raw is the whole frame, header included.
	Raw []byte
}

// walkFrames reads the h.Count frames of record rec, which must fill it
// exactly, into f, which fn sees; verify checks each frame's checksum. The
// caller owns f so that a reply of many one-message batches (what a
// producer sending one message at a time leaves) costs no allocation per
// batch.
func walkFrames(rec []byte, h BatchHeader, verify bool, f *Frame, fn func(*Frame) error) error {
	pos := BatchHeaderSize
	for i := uint32(0); i < h.Count; i++ {
		if len(rec)-pos < FrameHeaderSize {
			return malformed("batch", "message %d of %d: %d bytes left, its header is %d", i, h.Count, len(rec)-pos, FrameHeaderSize)
		}
		fh := rec[pos:]
		pl, hl := uint64(le.Uint32(fh[offFramePayload:])), uint64(le.Uint32(fh[offFrameHeaders:]))
		end := uint64(pos) + FrameHeaderSize + pl + hl
		if end > uint64(len(rec)) {
			return malformed("batch", "message %d of %d ends at byte %d of a %d-byte batch", i, h.Count, end, len(rec))
		}
		f.Checksum = le.Uint64(fh)
		copy(f.ID[:], fh[offFrameID:])
		f.OffsetDelta = le.Uint32(fh[offFrameDelta:])
		f.TimestampDelta = le.Uint32(fh[offFrameTSDelta:])
		body := rec[pos+FrameHeaderSize : end : end]
		f.Payload = body[:pl:pl]
		f.Headers = body[pl:]
		f.Raw = rec[pos:end:end]
		if verify && f.Checksum != FrameChecksum(f.Raw) {
			return &ChecksumError{Index: i, Got: f.Checksum, Want: FrameChecksum(f.Raw)}
		}
		if err := fn(f); err != nil {
			return err
		}
		pos = int(end)
	}
	if pos != len(rec) {
		return malformed("batch", "%d bytes after its %d messages", len(rec)-pos, h.Count)
	}
	return nil
}

// ChecksumError reports a message whose checksum does not match its bytes.
type ChecksumError struct {
	Index     uint32
	Got, Want uint64
	// Offset is the message's offset when known.
	Offset uint64
}

func (e *ChecksumError) Error() string {
	return malformed("message", "checksum %#x of message %d (offset %d) does not match its bytes (%#x)", e.Got, e.Index, e.Offset, e.Want).Error()
}

func (e *ChecksumError) Unwrap() error { return ErrMalformed }

// checkReserved checks the header bytes after the count: zero, except a
// 0.12 producer section (flag 1, then id, epoch and sequence, with its
// padding zero).
func checkReserved(b []byte, d Dialect) error {
	zero := func(from, to int) bool {
		for _, c := range b[from:to] {
			if c != 0 {
				return false
			}
		}
		return true
	}
	if d < V012 || b[offBatchProducerFlags] == 0 {
		if !zero(offBatchReserved, BatchHeaderSize) {
			return malformed("batch", "reserved header bytes are not zero")
		}
		return nil
	}
	if b[offBatchProducerFlags] != 1 || !zero(offBatchProducerFlags+1, offBatchProducerID) ||
		!zero(offBatchEpoch+2, offBatchSequence) || !zero(offBatchReserved012, BatchHeaderSize) {
		return malformed("batch", "producer section (flags %d) or reserved bytes malformed", b[offBatchProducerFlags])
	}
	return nil
}

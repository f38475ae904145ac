package replay

import (
	"encoding/binary"
	"strconv"

	"github.com/zeebo/xxh3"
)

// Source names the archived partitions a replay reads: stream and topic as
// the archive's keys name them, and the generation (the incarnation of the
// partitions; 0 until one was re-created).
type Source struct {
	Stream, Topic string
	Generation    uint32
}

// tag is the 32 bits of a message id that say which archived partition it
// comes from.
func (s Source) tag(partition uint32) uint32 {
	h := xxh3.HashString("iggy-s3-sink replay\x00" + s.Stream + "\x00" + s.Topic + "\x00" + strconv.FormatUint(uint64(partition), 10))
	return uint32(h)
}

// MessageID is the id a replay gives the archived message at offset of
// partition: the offset (bytes 0-7, little endian), the generation (8-11)
// and the partition's tag (12-15), so that it is the same on every replay
// of that message and says, read back from the target, which one it is.
func (s Source) MessageID(partition uint32, offset uint64) [16]byte {
	var id [16]byte
	binary.LittleEndian.PutUint64(id[0:], offset)
	binary.LittleEndian.PutUint32(id[8:], s.Generation)
	binary.LittleEndian.PutUint32(id[12:], s.tag(partition))
	return id
}

// Archived says which archived offset of partition a target message's id
// names, and false when the message is not this archive's.
func (s Source) Archived(partition uint32, id [16]byte) (uint64, bool) {
	if binary.LittleEndian.Uint32(id[8:]) != s.Generation || binary.LittleEndian.Uint32(id[12:]) != s.tag(partition) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(id[0:]), true
}

package keys

import (
	"math"
	"strconv"
	"strings"
)

// GenerationsFolder is the folder under the prefix that holds generation
// markers: one small JSON object per generation of each partition, which
// ties the generation to the incarnation of the partition it archives. It
// outlives the state table, so a state item created fresh (a new table, a
// restore) can tell which generation is the live one (issue 21, item 2).
// The leading '_' keeps it out of what Athena, Hive and Spark read.
const GenerationsFolder = "_generations"

// GenerationMarker is the key of the marker of this namer's generation:
// <prefix>/_generations/<stream>/<topic>/<PPPPP>-g<generation>.json, the
// names as Segment renders them, so no name can lead it out of the prefix.
func (p PartitionNamer) GenerationMarker() string {
	return p.GenerationsPrefix() + strconv.FormatUint(uint64(p.generation), 10) + ".json"
}

// GenerationsPrefix is the listing prefix of every generation marker of
// the partition, and of nothing else.
func (p PartitionNamer) GenerationsPrefix() string {
	dst := appendPrefix(nil, p.n.prefix)
	dst = append(dst, GenerationsFolder...)
	dst = append(dst, '/')
	dst = appendSegment(dst, p.path.stream)
	dst = append(dst, '/')
	dst = appendSegment(dst, p.path.topic)
	dst = append(dst, '/')
	dst = appendPadded(dst, uint64(p.path.partition), 5)
	return string(append(dst, "-g"...))
}

// ParseGenerationMarker reads the generation from a key GenerationMarker
// gave for one of the partitions under prefix; false for any other key.
func (p PartitionNamer) ParseGenerationMarker(key string) (uint32, bool) {
	rest, ok := strings.CutPrefix(key, p.GenerationsPrefix())
	if !ok {
		return 0, false
	}
	digits, ok := strings.CutSuffix(rest, ".json")
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	g, ok := parseDigits(digits)
	if !ok || g > math.MaxUint32 {
		return 0, false
	}
	return uint32(g), true
}

// NameMarker is the key of the marker that records the names the
// partition of stream id streamID and topic id topicID has now:
// <prefix>/_generations/_ids/<streamID>-<topicID>/<PPPPP>/<stream>/<topic>.json.
// Ids survive a rename on the server, names do not: a state item created
// fresh under new names lists NamesPrefix for the names the partition had
// before, whose state it carries over (issue 21, item 6). A stream named
// "_ids" does not collide: its generation markers are files where these
// are folders.
func (p PartitionNamer) NameMarker(streamID, topicID uint32) string {
	dst := []byte(p.NamesPrefix(streamID, topicID))
	dst = appendSegment(dst, p.path.stream)
	dst = append(dst, '/')
	dst = appendSegment(dst, p.path.topic)
	return string(append(dst, ".json"...))
}

// NamesPrefix lists the name markers of the partition's ids.
func (p PartitionNamer) NamesPrefix(streamID, topicID uint32) string {
	dst := appendPrefix(nil, p.n.prefix)
	dst = append(dst, GenerationsFolder+"/_ids/"...)
	dst = strconv.AppendUint(dst, uint64(streamID), 10)
	dst = append(dst, '-')
	dst = strconv.AppendUint(dst, uint64(topicID), 10)
	dst = append(dst, '/')
	dst = appendPadded(dst, uint64(p.path.partition), 5)
	return string(append(dst, '/'))
}

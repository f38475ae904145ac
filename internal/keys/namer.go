package keys

import (
	"math"
	"strconv"
	"strings"
)

// GapExt is the extension of gap markers. A marker is named like the data
// object of its range with a leading '_' (which Athena, Hive and Spark skip
// when they read a table location) and this extension.
const GapExt = "gap"

// HoleExt is the extension of hole markers: gap markers of offsets Iggy
// never had (its offsets skip them, as a 0.10 server's can after a
// recovery), so no message is missing there. Named like a gap marker.
const HoleExt = "hole"

// SkipExt is the extension of skip markers: gap markers of offsets the
// sink passed over on purpose, because the consumer group's offset was
// moved past them (by an operator) beyond what the sink had archived.
// Named like a gap marker.
const SkipExt = "skip"

// TooLargeExt is the extension of too-large markers: gap markers of a
// message larger than a poll may take in (max_poll_bytes), reported with
// its offset instead of archived, so that no run dies of memory on it.
// Named like a gap marker.
const TooLargeExt = "toolarge"

// RenamedExt is the extension of renamed markers: gap markers, under a
// topic's new name, of the offsets archived under its earlier name (a
// stream or topic renamed on the server), so that the new name's archive
// says where it begins. No message is missing there. Named like a gap
// marker.
const RenamedExt = "renamed"

// VoidExt is the extension of void markers. When a run cannot re-render an
// unfinished object (its messages are gone, or the format changed), it
// fences the object's key with an empty object of its format, so that a
// stalled writer can never still put the old object there, and writes a
// void marker next to it: the key covers no offsets. A void marker is
// named like the object it voids, extension included, with a leading '_'
// and this extension added.
const VoidExt = "void"

// ErrorsExt is the extension of error objects: the records of a data
// object that could not be written to it (invalid_payload =
// "error_object"), as JSON Lines. An error object is named like its data
// object — same template, partition, range and generation — under the
// error prefix instead of the prefix, with this extension.
const ErrorsExt = "errors.jsonl"

// Namer names the objects of one sink configuration: prefix, path template
// and the data objects' extension, fixed once.
type Namer struct {
	prefix string // trimmed of '/', "" for none
	tpl    *Template
	ext    string // without the leading dot, e.g. "jsonl.gz"
	// errPrefix is where error objects go (trimmed of '/'); hasErrors is
	// set by WithErrors.
	errPrefix string
	hasErrors bool
	// defaultSeg is the payload fields' default segment ("" for
	// DefaultValueSegment); fingerprint goes in manifests' names.
	defaultSeg  string
	fingerprint string
}

// NewNamer returns a Namer. ext is the data objects' extension without its
// leading dot ("jsonl", "json.zst").
func NewNamer(prefix string, t *Template, ext string) *Namer {
	return &Namer{prefix: strings.Trim(prefix, "/"), tpl: t, ext: ext}
}

// Ext is the data objects' extension, without its leading dot.
func (n *Namer) Ext() string { return n.ext }

// WithErrors returns a copy of n that also names error objects, under
// prefix (trimmed of '/' at both ends; CheckPrefix rules).
func (n *Namer) WithErrors(prefix string) *Namer {
	c := *n
	c.errPrefix, c.hasErrors = strings.Trim(prefix, "/"), true
	return &c
}

// ErrorsPrefix is the error objects' prefix; false when n names none.
func (n *Namer) ErrorsPrefix() (string, bool) { return n.errPrefix, n.hasErrors }

// ErrorsKey returns the key of the error object of the data object at
// dataKey, a key this Namer gave: the same path after the prefix, under
// the error prefix, with ErrorsExt. False when n names no error objects or
// dataKey is not one of its data objects' keys.
func (n *Namer) ErrorsKey(dataKey string) (string, bool) {
	if !strings.HasSuffix(dataKey, "."+n.ext) {
		return "", false
	}
	return n.ErrorsKeyOf(dataKey)
}

// ErrorsKeyOf is ErrorsKey for a data object of any format and
// compression (its own extension, as ParseName reads it): the error key of
// an object an earlier configuration named. Objects of two formats of one
// range share it.
func (n *Namer) ErrorsKeyOf(dataKey string) (string, bool) {
	if !n.hasErrors {
		return "", false
	}
	rest := dataKey
	if n.prefix != "" {
		if !strings.HasPrefix(rest, n.prefix+"/") {
			return "", false
		}
		rest = rest[len(n.prefix)+1:]
	}
	nm, ok := ParseName(dataKey)
	if !ok || nm.Gap || nm.Void || nm.Manifest {
		return "", false
	}
	rest = rest[:len(rest)-len(nm.Ext)]
	return string(appendPrefix(nil, n.errPrefix)) + rest + ErrorsExt, true
}

// Partition returns the namer of one partition's objects.
func (n *Namer) Partition(stream, topic string, partition uint32) PartitionNamer {
	pp := partitionPath{tpl: n.tpl, stream: stream, topic: topic, partition: partition}
	if len(n.tpl.fields) > 0 {
		pp.values = make([]string, len(n.tpl.fields))
		for i := range pp.values {
			pp.values[i] = n.DefaultSegment()
		}
	}
	return PartitionNamer{n: n, path: pp}
}

// PartitionNamer names one partition's data objects and gap markers.
type PartitionNamer struct {
	n          *Namer
	path       partitionPath
	generation uint32
}

// partitionPath renders the folders of one partition's objects, the path
// template filled in for its stream, topic and partition, under a prefix:
// the data prefix, or the error objects' (which mirror the data objects).
type partitionPath struct {
	tpl           *Template
	stream, topic string
	partition     uint32
	// values are the payload fields' segments (AppendValueSegment's), by
	// field: the default segment's in the unit folder, where markers and
	// manifests go.
	values []string
}

// Generation returns the namer of generation g of the partition: the
// objects of a partition deleted and re-created g times. Generation 0 is
// named exactly as upstream names objects; g > 0 adds "-g<g>" after the
// offset range, so no name of one incarnation is a name of another.
func (p PartitionNamer) Generation(g uint32) PartitionNamer {
	p.generation = g
	return p
}

// Object is the key of the data object holding offsets first..last, whose
// first message has server time tsMicros. Under a template with payload
// fields it is the key of the unit's manifest (see ManifestExt), which
// ValueObject names the data objects by.
func (p PartitionNamer) Object(first, last, tsMicros uint64) string {
	return string(p.AppendObject(nil, first, last, tsMicros))
}

// AppendObject appends Object's key to dst; it does not allocate when dst
// has room.
func (p PartitionNamer) AppendObject(dst []byte, first, last, tsMicros uint64) []byte {
	if p.HasValues() {
		dst = p.appendName(dst, p.n.prefix, true, first, last, tsMicros, p.n.ext)
		if p.n.fingerprint != "" {
			dst = append(append(dst, '.'), p.n.fingerprint...)
		}
		return append(append(dst, '.'), ManifestExt...)
	}
	return p.appendName(dst, p.n.prefix, false, first, last, tsMicros, p.n.ext)
}

// Gap is the key of the marker reporting offsets first..last as deleted
// before the sink read them; tsMicros is the server time of the first
// message after the gap.
func (p PartitionNamer) Gap(first, last, tsMicros uint64) string {
	return string(p.appendName(nil, p.n.prefix, true, first, last, tsMicros, GapExt))
}

// Hole is the key of the marker reporting offsets first..last as never
// written by Iggy (a hole in its offsets); tsMicros is the server time of
// the first message after it.
func (p PartitionNamer) Hole(first, last, tsMicros uint64) string {
	return string(p.appendName(nil, p.n.prefix, true, first, last, tsMicros, HoleExt))
}

// Skip is the key of the marker reporting offsets first..last as passed
// over because the consumer group was moved past them; tsMicros is the
// server time of the message at first (or the next one left).
func (p PartitionNamer) Skip(first, last, tsMicros uint64) string {
	return string(p.appendName(nil, p.n.prefix, true, first, last, tsMicros, SkipExt))
}

// TooLarge is the key of the marker reporting offsets first..last as
// messages too large to take in; tsMicros is the server time of the first.
func (p PartitionNamer) TooLarge(first, last, tsMicros uint64) string {
	return string(p.appendName(nil, p.n.prefix, true, first, last, tsMicros, TooLargeExt))
}

// Renamed is the key of the marker reporting offsets first..last as
// archived under the partition's earlier stream or topic name; tsMicros
// places it in the path template.
func (p PartitionNamer) Renamed(first, last, tsMicros uint64) string {
	return string(p.appendName(nil, p.n.prefix, true, first, last, tsMicros, RenamedExt))
}

// Errors is the key of the error object of the data object holding
// offsets first..last (Object's key with the error prefix and ErrorsExt);
// "" when the Namer names no error objects.
func (p PartitionNamer) Errors(first, last, tsMicros uint64) string {
	if !p.n.hasErrors {
		return ""
	}
	return string(p.appendName(nil, p.n.errPrefix, false, first, last, tsMicros, ErrorsExt))
}

// ErrorsListPrefix is ListPrefix for this partition's error objects; false
// when the Namer names none.
func (p PartitionNamer) ErrorsListPrefix() (string, bool) {
	if !p.n.hasErrors {
		return "", false
	}
	return p.path.listPrefix(p.n.errPrefix), true
}

// appendName appends the key of the object or marker (gap) of offsets
// first..last under prefix, with extension ext.
func (p PartitionNamer) appendName(dst []byte, prefix string, gap bool, first, last, tsMicros uint64, ext string) []byte {
	if dst == nil {
		dst = make([]byte, 0, len(prefix)+len(p.path.tpl.src)+len(p.path.stream)+len(p.path.topic)+64+len(ext))
	}
	dst = p.path.appendFolder(dst, prefix, tsMicros)
	dst = append(dst, '/')
	if gap {
		dst = append(dst, '_')
	}
	dst = appendFileName(dst, p.path.partition, first, last)
	if p.generation > 0 {
		dst = append(dst, "-g"...)
		dst = strconv.AppendUint(dst, uint64(p.generation), 10)
	}
	dst = append(dst, '.')
	return append(dst, ext...)
}

// ListPrefix is the longest fixed leading part of the keys of this
// partition's objects and gap markers: prefix and template rendered up to
// the first placeholder that varies between objects (a time or payload
// field), cut back to the last '/' so that data objects and gap markers
// both match.
func (p PartitionNamer) ListPrefix() string { return p.path.listPrefix(p.n.prefix) }

// appendFolder appends the folder under prefix of the partition's objects
// whose first message has server time tsMicros, without a trailing '/'.
func (pp partitionPath) appendFolder(dst []byte, prefix string, tsMicros uint64) []byte {
	dst = appendPrefix(dst, prefix)
	return pp.tpl.appendRendered(dst, pp, tsMicros, len(pp.tpl.segments))
}

// listPrefix is ListPrefix under prefix.
func (pp partitionPath) listPrefix(prefix string) string {
	t := pp.tpl
	dst := appendPrefix(nil, prefix)
	n := len(t.segments)
	for i, s := range t.segments {
		if s.kind >= phDate {
			n = i
			break
		}
	}
	dst = t.appendRendered(dst, pp, 0, n)
	if n == len(t.segments) {
		dst = append(dst, '/')
	}
	return string(dst)
}

// Name is what a key's last path element says.
type Name struct {
	Partition   uint32
	First, Last uint64
	// Generation is the partition's incarnation count (0 for names without "-g").
	Generation uint32
	// Revision counts the keys a range had because earlier ones were
	// voided (0 for names without "-r"; see NextRevision).
	Revision uint32
	// Gap is set for a gap marker (Hole too for a hole marker, which is a
	// gap marker of offsets Iggy never had; Skip too for a skip marker, of
	// offsets the group was moved past; TooLarge too for a too-large
	// marker; Renamed too for a renamed marker), Void for a void marker.
	// Manifest is set for a unit's manifest (and for its void marker):
	// the range's object under a template with payload fields; Fingerprint
	// is what its name carries (Namer.WithFingerprint).
	Gap, Hole, Skip, TooLarge, Renamed, Void, Manifest bool
	Fingerprint                                        string
	// Ext is the extension without its leading dot ("jsonl.gz", "gap"); for
	// a void marker, the extension of the object it voids.
	Ext string
}

// ParseName reads the last path element of key as Object or Gap render it
// (or a void marker). Only canonical names are accepted, so a listing can
// tell the sink's objects from other files; error objects are not accepted
// (ParseErrorsName reads them).
func ParseName(key string) (Name, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	marker := strings.HasPrefix(name, "_")
	if marker && strings.HasSuffix(name, "."+VoidExt) {
		n, ok := parseDataName(name[1 : len(name)-len(VoidExt)-1])
		if !ok {
			return Name{}, false
		}
		n.Void = true
		return n, true
	}
	if marker && strings.HasSuffix(name, "."+ManifestExt) {
		return parseDataName(name)
	}
	n, ok := parseName(strings.TrimPrefix(name, "_"))
	if !ok || marker != isMarkerExt(n.Ext) || n.Ext == ErrorsExt {
		return Name{}, false
	}
	n.Gap, n.Hole, n.Skip, n.TooLarge, n.Renamed = marker, n.Ext == HoleExt, n.Ext == SkipExt, n.Ext == TooLargeExt, n.Ext == RenamedExt
	return n, true
}

// parseDataName reads a data object's name, or a manifest's.
func parseDataName(name string) (Name, bool) {
	manifest := strings.HasPrefix(name, "_") && strings.HasSuffix(name, "."+ManifestExt)
	fp := ""
	if manifest {
		name = name[1 : len(name)-len(ManifestExt)-1]
		if d := strings.LastIndexByte(name, '.'); d >= 0 && isFingerprint(name[d+1:]) {
			name, fp = name[:d], name[d+1:]
		}
	}
	n, ok := parseName(name)
	if !ok || isMarkerExt(n.Ext) || n.Ext == ErrorsExt || strings.HasSuffix(n.Ext, "."+ManifestExt) {
		return Name{}, false
	}
	n.Manifest, n.Fingerprint = manifest, fp
	return n, true
}

// isFingerprint reports eight lowercase hex digits.
func isFingerprint(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// isMarkerExt reports the extensions of gap markers (of every cause).
func isMarkerExt(ext string) bool {
	return ext == GapExt || ext == HoleExt || ext == SkipExt || ext == TooLargeExt || ext == RenamedExt
}

// ParseErrorsName reads the last path element of key as Errors renders it
// (ParseName refuses error objects: they cover no offsets of their own).
func ParseErrorsName(key string) (Name, bool) {
	name := key[strings.LastIndexByte(key, '/')+1:]
	n, ok := parseName(name)
	if !ok || n.Ext != ErrorsExt {
		return Name{}, false
	}
	return n, true
}

// parseName reads "<partition>-<first:020>-<last:020>[-g<generation>][-r<revision>].<ext>".
func parseName(name string) (Name, bool) {
	dash := strings.IndexByte(name, '-')
	if dash < 5 {
		return Name{}, false
	}
	p, ok := parseDigits(name[:dash])
	if !ok || p > math.MaxUint32 || (dash > 5 && name[0] == '0') {
		return Name{}, false
	}
	rest := name[dash+1:]
	// 20 digits, '-', 20 digits, then the generation or '.', then an extension.
	if len(rest) < 20+1+20+1+1 || rest[20] != '-' {
		return Name{}, false
	}
	f, ok1 := parseDigits(rest[:20])
	l, ok2 := parseDigits(rest[21:41])
	if !ok1 || !ok2 || f > l {
		return Name{}, false
	}
	n := Name{Partition: uint32(p), First: f, Last: l}
	rest = rest[41:]
	var ok3 bool
	if n.Generation, rest, ok3 = suffixNumber(rest, "-g"); !ok3 {
		return Name{}, false
	}
	if n.Revision, rest, ok3 = suffixNumber(rest, "-r"); !ok3 {
		return Name{}, false
	}
	if len(rest) < 2 || rest[0] != '.' {
		return Name{}, false
	}
	n.Ext = rest[1:]
	return n, true
}

// suffixNumber reads an optional "<tag><number>" at the start of rest, up
// to the next '-' or '.': canonical only (no leading zero, never 0, since
// 0 is written as no suffix).
func suffixNumber(rest, tag string) (uint32, string, bool) {
	if !strings.HasPrefix(rest, tag) {
		return 0, rest, true
	}
	end := strings.IndexAny(rest[len(tag):], "-.")
	if end < 0 {
		return 0, rest, false
	}
	digits := rest[len(tag) : len(tag)+end]
	v, ok := parseDigits(digits)
	if !ok || v == 0 || v > math.MaxUint32 || digits[0] == '0' {
		return 0, rest, false
	}
	return uint32(v), rest[len(tag)+end:], true
}

// NextRevision returns the key of the next revision of the data object at
// key: same folder, range and generation, "-r<n+1>" added (replacing
// "-r<n>"). A voided key is never written again (its fence holds it), so a
// range that is read again after its key was voided and renders to that
// same key goes under the next revision instead. False for a key that is
// not a data object's.
func NextRevision(key string) (string, bool) {
	i := strings.LastIndexByte(key, '/') + 1
	n, ok := ParseName(key)
	if !ok || n.Gap || n.Void || n.Revision == math.MaxUint32 {
		return "", false
	}
	b := []byte(key[:i])
	if n.Manifest {
		b = append(b, '_')
	}
	b = appendFileName(b, n.Partition, n.First, n.Last)
	if n.Generation > 0 {
		b = strconv.AppendUint(append(b, "-g"...), uint64(n.Generation), 10)
	}
	b = strconv.AppendUint(append(b, "-r"...), uint64(n.Revision)+1, 10)
	b = append(append(b, '.'), n.Ext...)
	if n.Fingerprint != "" {
		b = append(append(b, '.'), n.Fingerprint...)
	}
	if n.Manifest {
		b = append(append(b, '.'), ManifestExt...)
	}
	return string(b), true
}

// VoidMarker returns the key of the void marker for the data object at key,
// in the same folder; false when key is not a data object's name.
func VoidMarker(key string) (string, bool) {
	i := strings.LastIndexByte(key, '/') + 1
	n, ok := ParseName(key)
	if !ok || n.Gap || n.Void {
		return "", false
	}
	return key[:i] + "_" + key[i:] + "." + VoidExt, true
}

// Voided returns the key of the data object the void marker at key voids.
func Voided(key string) (string, bool) {
	i := strings.LastIndexByte(key, '/') + 1
	n, ok := ParseName(key)
	if !ok || !n.Void {
		return "", false
	}
	return key[:i] + key[i+1:len(key)-len(VoidExt)-1], true
}

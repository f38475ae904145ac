package keys

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultValueSegment is the folder segment of a payload field a record
// does not have as a scalar (missing, null, an empty string, an object or
// an array): Hive's name for the partition of null values, which Hive,
// Spark, Trino and Athena read as NULL in a key=value folder.
const DefaultValueSegment = "__HIVE_DEFAULT_PARTITION__"

// ManifestExt is the extension of unit manifests. Under a template with
// payload fields, the offsets of one object's range (a unit) are split
// into one object per value; the manifest lists them and their records,
// named like the unit's data object with a leading '_' and this extension
// added, in the unit folder: the template rendered with every payload field
// at its default segment. Written last, it is the unit's "object" for the
// delivery protocol: its key is the intent's, create-only.
const ManifestExt = "manifest"

// ErrInvalidValueSegment is wrapped by CheckDefaultSegment's errors.
var ErrInvalidValueSegment = errors.New("invalid default segment")

// CheckDefaultSegment refuses a default segment that could leave its
// folder or be taken for a value's: it must be non-empty, of
// [A-Za-z0-9._-] only, not start with '.' and be at most MaxValueSegment
// bytes.
func CheckDefaultSegment(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: it is empty; use e.g. %q", ErrInvalidValueSegment, DefaultValueSegment)
	case s[0] == '.':
		return fmt.Errorf("%w: %q starts with '.', which would hide the folder (or make it \".\" or \"..\")", ErrInvalidValueSegment, s)
	case len(s) > MaxValueSegment:
		return fmt.Errorf("%w: %q is longer than %d bytes", ErrInvalidValueSegment, s, MaxValueSegment)
	}
	for i := 0; i < len(s); i++ {
		if !isSafe(s[i]) {
			return fmt.Errorf("%w: %q holds %q; only [A-Za-z0-9._-] may stand in a folder name as it is", ErrInvalidValueSegment, s, s[i])
		}
	}
	return nil
}

// MaxValueSegment bounds a value's folder segment in bytes: a longer one
// is cut and ends in '~' and a hash of the whole text (S3 keys hold at
// most 1,024 bytes).
const MaxValueSegment = 128

// valueHashLen is how many hex digits of SHA-256 end a cut segment.
const valueHashLen = 16

// AppendValueSegment appends the folder segment of a payload field whose
// text is text (a string's decoded text, a number's or a boolean's JSON
// text), with def the default segment (of records without a scalar
// there). Two different texts never render alike, and none renders as def,
// "." or "..", or starts with '_' or '.' (the sink's hidden folders, and
// what query engines skip): every byte outside [A-Za-z0-9._-], a leading
// '_' or '.', and the first byte of a text equal to def are written as
// %XX (uppercase hex: Hive's escaping of partition folders, which Hive,
// Spark, Trino and Athena decode back). A segment longer than
// MaxValueSegment is cut, with '~' (which an escaped text never holds)
// and a hash of the whole text after it. The empty text renders as def.
func AppendValueSegment(dst, text []byte, def string) []byte {
	if len(text) == 0 {
		return append(dst, def...)
	}
	start := len(dst)
	escapeFirst := text[0] == '_' || text[0] == '.' || string(text) == def
	for i, c := range text {
		if isSafe(c) && !(i == 0 && escapeFirst) {
			dst = append(dst, c)
			continue
		}
		dst = append(dst, '%', hexUpper[c>>4], hexUpper[c&15])
	}
	if len(dst)-start <= MaxValueSegment {
		return dst
	}
	cut := start + MaxValueSegment - 1 - valueHashLen
	for cut > start && dst[cut-1] == '%' || cut > start+1 && dst[cut-2] == '%' {
		cut-- // never split an escape
	}
	sum := sha256.Sum256(text)
	dst = append(dst[:cut], '~')
	return hex.AppendEncode(dst, sum[:valueHashLen/2])
}

const hexUpper = "0123456789ABCDEF"

// HasValues reports whether the template names payload fields.
func (t *Template) HasValues() bool { return len(t.fields) > 0 }

// WithDefaultSegment returns a copy of n whose payload fields render
// records without a scalar there as def (CheckDefaultSegment's rules);
// DefaultValueSegment until then.
func (n *Namer) WithDefaultSegment(def string) *Namer {
	c := *n
	c.defaultSeg = def
	return &c
}

// DefaultSegment is the segment of records without a scalar at a payload
// field.
func (n *Namer) DefaultSegment() string {
	if n.defaultSeg == "" {
		return DefaultValueSegment
	}
	return n.defaultSeg
}

// HasValues reports whether the namer's template names payload fields:
// then Object names a unit's manifest, and ValueObject its data objects.
func (p PartitionNamer) HasValues() bool { return p.path.tpl.HasValues() }

// ValueObject is the key of the data object of the payload values segs (one
// per PayloadFields entry, as AppendValueSegment renders them) of the unit
// whose manifest is at unitKey, a key Object gave: the unit's file name
// (partition, range, generation, revision, extension) in the unit's folder
// with its value parts (the path parts holding a payload field) rendered
// for segs at server time tsMicros (the unit's first message's, so that
// every value object of a unit lies in the same time folder). The other
// parts are taken from unitKey as they are: a unit begun under a stream
// or topic's earlier name is finished under it. False when unitKey is no
// manifest's key, its folder does not have the template's parts, or segs
// has the wrong length.
func (p PartitionNamer) ValueObject(unitKey string, tsMicros uint64, segs []string) (string, bool) {
	i := strings.LastIndexByte(unitKey, '/')
	n, ok := ParseName(unitKey)
	tpl := p.path.tpl
	if i < 0 || !ok || !n.Manifest || n.Void || len(segs) != len(tpl.fields) {
		return "", false
	}
	parts := strings.Split(unitKey[:i], "/")
	off := len(parts) - len(tpl.parts)
	if off < 0 {
		return "", false
	}
	pp := p.path
	pp.values = segs
	for _, j := range tpl.valueParts {
		parts[off+j] = string(appendSegments(nil, tpl.parts[j], pp, tsMicros))
	}
	file := string(appendFileName(nil, n.Partition, n.First, n.Last))
	if n.Generation > 0 {
		file += "-g" + strconv.FormatUint(uint64(n.Generation), 10)
	}
	if n.Revision > 0 {
		file += "-r" + strconv.FormatUint(uint64(n.Revision), 10)
	}
	return strings.Join(parts, "/") + "/" + file + "." + n.Ext, true
}

// WithFingerprint returns a copy of n whose unit manifests carry fp (eight
// lowercase hex digits, "" for none) in their names: a digest of what
// decides a record's value (the path template, the default segment,
// transforms), so that a unit begun under other settings is told by its
// key.
func (n *Namer) WithFingerprint(fp string) *Namer {
	c := *n
	c.fingerprint = fp
	return &c
}

// Fingerprint is what WithFingerprint set.
func (n *Namer) Fingerprint() string { return n.fingerprint }

// HasValues reports whether the namer's template names payload fields.
func (n *Namer) HasValues() bool { return n != nil && n.tpl.HasValues() }

// PayloadFields are the namer's template's (Template.PayloadFields).
func (n *Namer) PayloadFields() [][]string { return n.tpl.fields }

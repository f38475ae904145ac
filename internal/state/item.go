package state

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const (
	attrPK          = "pk"
	attrGroup       = "group_name"
	attrStream      = "stream_name"
	attrTopic       = "topic_name"
	attrPartition   = "partition_id"
	attrOwner       = "lease_owner"
	attrExpires     = "lease_expires"
	attrVersion     = "version"
	attrHasWritten  = "has_written"
	attrLastWritten = "last_written"
	attrIntentFirst = "intent_first"
	attrIntentLast  = "intent_last"
	attrIntentKey   = "intent_key"
	attrObjects     = "objects"
	attrMessages    = "messages"
	attrBytes       = "bytes"
	attrGapMessages = "gap_messages"
	attrUpdatedAt   = "updated_at"
	attrWriteID     = "write_id"
	attrIncarnation = "incarnation"
	attrGeneration  = "generation"
	attrLastTS      = "last_timestamp"
	attrIntentTS    = "intent_first_timestamp"
	attrFromStream  = "carried_from_stream"
	attrFromTopic   = "carried_from_topic"
)

// known are the attributes decodeItem reads (and write_id); the rest of an
// item is carried through writes unchanged.
var known = map[string]bool{
	attrPK: true, attrGroup: true, attrStream: true, attrTopic: true, attrPartition: true, attrOwner: true,
	attrExpires: true, attrVersion: true, attrHasWritten: true, attrLastWritten: true, attrIntentFirst: true,
	attrIntentLast: true, attrIntentKey: true, attrObjects: true, attrMessages: true, attrBytes: true,
	attrGapMessages: true, attrUpdatedAt: true, attrWriteID: true, attrIncarnation: true, attrGeneration: true,
	attrLastTS: true, attrIntentTS: true, attrFromStream: true, attrFromTopic: true,
}

// encodeItem is the whole item that stores s, with writeID as the write's
// id: every attribute decodeItem reads (cleared ones as ""/0; the
// incarnation, generation and carried-from names only once recorded), and
// the attributes s carried from the item it was read from.
func encodeItem(s State, writeID string) map[string]types.AttributeValue {
	in := Intent{}
	if s.Intent != nil {
		in = *s.Intent
	}
	item := map[string]types.AttributeValue{
		attrPK: str(s.Key.ID()), attrGroup: str(s.Key.Group), attrStream: str(s.Key.Stream), attrTopic: str(s.Key.Topic),
		attrPartition: num(uint64(s.Key.Partition)), attrOwner: str(s.Owner), attrExpires: numInt(msOf(s.LeaseExpires)),
		attrVersion: numInt(s.Version), attrHasWritten: &types.AttributeValueMemberBOOL{Value: s.HasWritten},
		attrLastWritten: num(s.LastWritten), attrLastTS: num(s.LastTimestamp),
		attrIntentFirst: num(in.First), attrIntentLast: num(in.Last), attrIntentKey: str(in.ObjectKey), attrIntentTS: num(in.FirstTimestamp),
		attrObjects: num(s.Objects), attrMessages: num(s.Messages), attrBytes: num(s.Bytes), attrGapMessages: num(s.GapMessages),
		attrUpdatedAt: numInt(msOf(s.UpdatedAt)), attrWriteID: str(writeID),
	}
	for k, v := range s.unknown { // decodeItem keeps no known attribute there
		item[k] = v
	}
	// Absent until first recorded, as the layout in the package doc says.
	if s.Incarnation != 0 {
		item[attrIncarnation] = num(s.Incarnation)
	}
	if s.Generation != 0 {
		item[attrGeneration] = num(uint64(s.Generation))
	}
	if s.CarriedFromStream != "" || s.CarriedFromTopic != "" {
		item[attrFromStream], item[attrFromTopic] = str(s.CarriedFromStream), str(s.CarriedFromTopic)
	}
	return item
}

// msOf is t in Unix milliseconds; 0 for the zero time.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// decodeItem parses a stored item. Absent attributes are zero values, since items are built up by
// ADD/SET over time; attributes of the wrong type or out of range are errors naming the attribute.
func decodeItem(item map[string]types.AttributeValue) (State, error) {
	r := &itemReader{item: item}
	pk := r.str(attrPK)
	s, in := r.state()
	if r.err != nil {
		return State{}, r.err
	}
	intent, err := in.intent()
	if err != nil {
		return State{}, err
	}
	s.Intent = intent
	s.unknown = unknownAttrs(item)
	if pk != s.Key.ID() {
		return State{}, fmt.Errorf("attribute %s %q does not match the key attributes (%s)", attrPK, pk, s.Key.ID())
	}
	return s, nil
}

// state reads every attribute of the State but pk. The order of the reads is
// the order in which an item with several bad attributes has always had them
// reported. The intent attributes are returned as stored, for intent to check.
func (r *itemReader) state() (State, intentAttrs) {
	var (
		s  State
		in intentAttrs
	)
	s.Key.Group, s.Key.Stream, s.Key.Topic = r.str(attrGroup), r.str(attrStream), r.str(attrTopic)
	s.Key.Partition = r.u32(attrPartition)
	s.Owner = r.str(attrOwner)
	s.LeaseExpires = msTime(r.i64(attrExpires))
	s.Version = r.i64(attrVersion)
	s.HasWritten = r.boolean(attrHasWritten)
	s.LastWritten = r.u64(attrLastWritten)
	in.first, in.hasFirst = r.unsigned(attrIntentFirst, 64)
	in.last, in.hasLast = r.unsigned(attrIntentLast, 64)
	in.objectKey = r.str(attrIntentKey)
	s.Objects, s.Messages, s.Bytes, s.GapMessages = r.u64(attrObjects), r.u64(attrMessages), r.u64(attrBytes), r.u64(attrGapMessages)
	s.UpdatedAt = msTime(r.i64(attrUpdatedAt))
	s.Incarnation = r.u64(attrIncarnation)
	s.LastTimestamp = r.u64(attrLastTS)
	in.firstTimestamp = r.u64(attrIntentTS)
	s.CarriedFromStream, s.CarriedFromTopic = r.str(attrFromStream), r.str(attrFromTopic)
	s.Generation = r.u32(attrGeneration)
	return s, in
}

// intentAttrs are an item's intent attributes as stored, before intent checks
// that they agree.
type intentAttrs struct {
	first, last       uint64
	hasFirst, hasLast bool
	objectKey         string
	firstTimestamp    uint64
}

// intent is the Intent the attributes record; nil when intent_key is empty,
// since clearing an intent leaves intent_first and intent_last at 0 or absent.
func (a intentAttrs) intent() (*Intent, error) {
	switch {
	case a.objectKey == "":
		return nil, nil
	case !a.hasFirst || !a.hasLast:
		return nil, fmt.Errorf("attribute %s is set but %s or %s is missing", attrIntentKey, attrIntentFirst, attrIntentLast)
	case a.first > a.last:
		return nil, fmt.Errorf("attributes %s..%s: %d is after %d", attrIntentFirst, attrIntentLast, a.first, a.last)
	}
	return &Intent{First: a.first, Last: a.last, ObjectKey: a.objectKey, FirstTimestamp: a.firstTimestamp}, nil
}

// unknownAttrs are the attributes of item that decodeItem does not read (those
// a newer version added), for writes to carry through; nil when there are none.
func unknownAttrs(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	var unknown map[string]types.AttributeValue
	for k, v := range item {
		if !known[k] {
			if unknown == nil {
				unknown = map[string]types.AttributeValue{}
			}
			unknown[k] = v
		}
	}
	return unknown
}

// itemReader reads an item's attributes as Go values. It keeps the first
// error and reads every attribute after it as absent, so that the error
// names the first bad attribute read.
type itemReader struct {
	item map[string]types.AttributeValue
	err  error
}

// attr is the named attribute; ok is false when the item has none or an
// earlier read failed.
func (r *itemReader) attr(name string) (v types.AttributeValue, ok bool) {
	if r.err != nil {
		return nil, false
	}
	v, ok = r.item[name]
	return v, ok
}

// str reads an S attribute.
func (r *itemReader) str(name string) string {
	v, ok := r.attr(name)
	if !ok {
		return ""
	}
	sv, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		r.err = fmt.Errorf("attribute %s: want type S, got %T", name, v)
		return ""
	}
	return sv.Value
}

// boolean reads a BOOL attribute.
func (r *itemReader) boolean(name string) bool {
	v, ok := r.attr(name)
	if !ok {
		return false
	}
	b, ok := v.(*types.AttributeValueMemberBOOL)
	if !ok {
		r.err = fmt.Errorf("attribute %s: want type BOOL, got %T", name, v)
		return false
	}
	return b.Value
}

// number is the decimal text of an N attribute.
func (r *itemReader) number(name string) (string, bool) {
	v, ok := r.attr(name)
	if !ok {
		return "", false
	}
	nv, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		r.err = fmt.Errorf("attribute %s: want type N, got %T", name, v)
		return "", false
	}
	return nv.Value, true
}

// unsigned reads an N attribute that must fit in an unsigned integer of the
// given bit size; ok reports whether the item has it and it does.
func (r *itemReader) unsigned(name string, bits int) (n uint64, ok bool) {
	text, ok := r.number(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(text, 10, bits)
	if err != nil {
		r.err = fmt.Errorf("attribute %s: %q is not a uint%d", name, text, bits)
		return 0, false
	}
	return n, true
}

// u64 reads an N attribute that must be a uint64.
func (r *itemReader) u64(name string) uint64 {
	n, _ := r.unsigned(name, 64)
	return n
}

// u32 reads an N attribute that must be a uint32.
func (r *itemReader) u32(name string) uint32 {
	n, _ := r.unsigned(name, 32)
	return uint32(n)
}

// i64 reads an N attribute that must be an int64.
func (r *itemReader) i64(name string) int64 {
	text, ok := r.number(name)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		r.err = fmt.Errorf("attribute %s: %q is not an int64", name, text)
		return 0
	}
	return n
}

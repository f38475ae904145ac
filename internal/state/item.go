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
	var (
		s   State
		err error
	)
	str := func(name string) string {
		v, ok := item[name]
		if !ok || err != nil {
			return ""
		}
		sv, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			err = fmt.Errorf("attribute %s: want type S, got %T", name, v)
			return ""
		}
		return sv.Value
	}
	number := func(name string, bits int, signed bool) (uint64, int64, bool) {
		v, ok := item[name]
		if !ok || err != nil {
			return 0, 0, false
		}
		nv, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			err = fmt.Errorf("attribute %s: want type N, got %T", name, v)
			return 0, 0, false
		}
		if signed {
			n, perr := strconv.ParseInt(nv.Value, 10, bits)
			if perr != nil {
				err = fmt.Errorf("attribute %s: %q is not an int%d", name, nv.Value, bits)
			}
			return 0, n, perr == nil
		}
		n, perr := strconv.ParseUint(nv.Value, 10, bits)
		if perr != nil {
			err = fmt.Errorf("attribute %s: %q is not a uint%d", name, nv.Value, bits)
		}
		return n, 0, perr == nil
	}
	u64 := func(name string) uint64 { n, _, _ := number(name, 64, false); return n }
	i64 := func(name string) int64 { _, n, _ := number(name, 64, true); return n }

	pk := str(attrPK)
	s.Key.Group, s.Key.Stream, s.Key.Topic = str(attrGroup), str(attrStream), str(attrTopic)
	part, _, _ := number(attrPartition, 32, false)
	s.Key.Partition = uint32(part)
	s.Owner = str(attrOwner)
	s.LeaseExpires = msTime(i64(attrExpires))
	s.Version = i64(attrVersion)
	if v, ok := item[attrHasWritten]; ok && err == nil {
		b, ok := v.(*types.AttributeValueMemberBOOL)
		if !ok {
			err = fmt.Errorf("attribute %s: want type BOOL, got %T", attrHasWritten, v)
		} else {
			s.HasWritten = b.Value
		}
	}
	s.LastWritten = u64(attrLastWritten)
	first, _, hasFirst := number(attrIntentFirst, 64, false)
	last, _, hasLast := number(attrIntentLast, 64, false)
	objectKey := str(attrIntentKey)
	s.Objects, s.Messages, s.Bytes, s.GapMessages = u64(attrObjects), u64(attrMessages), u64(attrBytes), u64(attrGapMessages)
	s.UpdatedAt = msTime(i64(attrUpdatedAt))
	s.Incarnation = u64(attrIncarnation)
	s.LastTimestamp = u64(attrLastTS)
	intentTS := u64(attrIntentTS)
	s.CarriedFromStream, s.CarriedFromTopic = str(attrFromStream), str(attrFromTopic)
	gen, _, _ := number(attrGeneration, 32, false)
	s.Generation = uint32(gen)
	if err != nil {
		return State{}, err
	}
	switch {
	case objectKey == "":
		// no intent; intent_first/intent_last are left at 0 or absent
	case !hasFirst || !hasLast:
		return State{}, fmt.Errorf("attribute %s is set but %s or %s is missing", attrIntentKey, attrIntentFirst, attrIntentLast)
	case first > last:
		return State{}, fmt.Errorf("attributes %s..%s: %d is after %d", attrIntentFirst, attrIntentLast, first, last)
	default:
		s.Intent = &Intent{First: first, Last: last, ObjectKey: objectKey, FirstTimestamp: intentTS}
	}
	for k, v := range item {
		if !known[k] {
			if s.unknown == nil {
				s.unknown = map[string]types.AttributeValue{}
			}
			s.unknown[k] = v
		}
	}
	if pk != s.Key.ID() {
		return State{}, fmt.Errorf("attribute %s %q does not match the key attributes (%s)", attrPK, pk, s.Key.ID())
	}
	return s, nil
}

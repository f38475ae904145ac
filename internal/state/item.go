package state

import (
	"fmt"
	"strconv"

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
	if pk != s.Key.ID() {
		return State{}, fmt.Errorf("attribute %s %q does not match the key attributes (%s)", attrPK, pk, s.Key.ID())
	}
	return s, nil
}

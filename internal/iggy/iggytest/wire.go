package iggytest

import (
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf8"
)

// Command codes of the 0.8.0 legacy TCP protocol that this broker answers.
const (
	CodePing                uint32 = 1
	CodeGetClusterMetadata  uint32 = 12
	CodeLoginUser           uint32 = 38
	CodeLoginWithToken      uint32 = 44
	CodePollMessages        uint32 = 100
	CodeSendMessages        uint32 = 101
	CodeGetConsumerOffset   uint32 = 120
	CodeStoreConsumerOffset uint32 = 121
	CodeGetStream           uint32 = 200
	CodeGetStreams          uint32 = 201
	CodeCreateStream        uint32 = 202
	CodeDeleteStream        uint32 = 203
	CodeGetTopic            uint32 = 300
	CodeGetTopics           uint32 = 301
	CodeCreateTopic         uint32 = 302
	CodeDeleteTopic         uint32 = 303
	CodeGetConsumerGroup    uint32 = 600
	CodeGetConsumerGroups   uint32 = 601
	CodeCreateConsumerGroup uint32 = 602
	CodeDeleteConsumerGroup uint32 = 603
	CodeJoinConsumerGroup   uint32 = 604
	CodeLeaveConsumerGroup  uint32 = 605
)

// Status codes (IggyError::as_code of server 0.8.0) the broker answers with.
const (
	StatusOK                     uint32 = 0
	StatusGeneric                uint32 = 1
	StatusInvalidCommand         uint32 = 3
	StatusInvalidFormat          uint32 = 4
	StatusInvalidIdentifier      uint32 = 6
	StatusResourceNotFound       uint32 = 20
	StatusUnauthenticated        uint32 = 40
	StatusInvalidCredentials     uint32 = 42
	StatusInvalidUsername        uint32 = 43
	StatusInvalidPassword        uint32 = 44
	StatusStreamNotFound         uint32 = 1009
	StatusStreamNameExists       uint32 = 1012
	StatusInvalidStreamName      uint32 = 1013
	StatusTopicNotFound          uint32 = 2010
	StatusTopicNameExists        uint32 = 2013
	StatusInvalidTopicName       uint32 = 2014
	StatusTooManyPartitions      uint32 = 2015
	StatusPartitionNotFound      uint32 = 3007
	StatusNoPartitions           uint32 = 3008
	StatusNotResolvedConsumer    uint32 = 3022
	StatusInvalidMessagesCount   uint32 = 4009
	StatusInvalidPayloadLength   uint32 = 4025
	StatusInvalidMessagesSize    uint32 = 4036
	StatusNonZeroOffset          uint32 = 4031
	StatusMissingIndex           uint32 = 4033
	StatusInvalidOffset          uint32 = 4100
	StatusGroupNotFound          uint32 = 5000
	StatusGroupNameExists        uint32 = 5004
	StatusInvalidGroupName       uint32 = 5005
	StatusGroupMemberNotFound    uint32 = 5006
	maxControlPayload                   = 10 << 20
	maxSendPayload                      = 64 << 20
	messageHeaderSize                   = 64
	indexSize                           = 16
	maxPartitions                       = 1000
	requestLengthFieldSize              = 4
	pollHeaderSize                      = 16
	groupRebalanceTimeoutDefault        = 30 // seconds
	heartbeatDefault                    = 30 * time.Second
)

// StatusError is a non-zero reply status with the reason the broker chose it.
type StatusError struct {
	Status uint32
	Reason string
}

func (e *StatusError) Error() string { return fmt.Sprintf("iggy status %d: %s", e.Status, e.Reason) }

func fail(status uint32, format string, args ...any) *StatusError {
	return &StatusError{Status: status, Reason: fmt.Sprintf(format, args...)}
}

// reader decodes a request payload; the first short read sticks as err so decoders
// can read every field and check once.
type reader struct {
	b   []byte
	off int
	err *StatusError
}

func (r *reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = fail(StatusInvalidCommand, "request too short for %s: need %d bytes at %d, have %d", what, n, r.off, len(r.b)-r.off)
		return false
	}
	return true
}

func (r *reader) u8(what string) uint8 {
	if !r.need(1, what) {
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) u32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64(what string) uint64 {
	if !r.need(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) bytes(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	v := r.b[r.off : r.off+n]
	r.off += n
	return v
}

// name reads a u8-length-prefixed UTF-8 name of 1..255 bytes; bad names get status bad.
func (r *reader) name(what string, bad uint32) string {
	n := int(r.u8(what + " length"))
	v := r.bytes(n, what)
	if r.err != nil {
		return ""
	}
	if n == 0 || !utf8.Valid(v) {
		r.err = fail(bad, "invalid %s %q", what, v)
		return ""
	}
	return string(v)
}

func (r *reader) identifier(what string) ident {
	kind := r.u8(what + " identifier kind")
	n := int(r.u8(what + " identifier length"))
	v := r.bytes(n, what+" identifier")
	if r.err != nil {
		return ident{}
	}
	switch {
	case kind == 1 && n == 4:
		return ident{numeric: true, id: binary.LittleEndian.Uint32(v)}
	case kind == 2 && n > 0 && utf8.Valid(v):
		return ident{name: string(v)}
	case kind != 1 && kind != 2:
		// As a real 0.8.0 server answers: an unknown kind is an invalid
		// command, a known kind with a bad value an invalid format.
		r.err = fail(StatusInvalidCommand, "invalid %s identifier kind %d", what, kind)
	default:
		r.err = fail(StatusInvalidFormat, "invalid %s identifier (kind %d, length %d)", what, kind, n)
	}
	return ident{}
}

func (r *reader) optionalPartition() (uint32, bool) {
	flag := r.u8("partition flag")
	p := r.u32("partition id")
	if r.err == nil && flag > 1 {
		r.err = fail(StatusInvalidCommand, "invalid partition flag %d", flag)
	}
	return p, flag == 1
}

func (r *reader) consumer() consumerRef {
	kind := r.u8("consumer kind")
	id := r.identifier("consumer")
	if r.err == nil && kind != 1 && kind != 2 {
		r.err = fail(StatusInvalidCommand, "invalid consumer kind %d", kind)
	}
	return consumerRef{group: kind == 2, id: id}
}

// end fails when bytes are left over: 0.8 decoders check exact lengths.
func (r *reader) end() *StatusError {
	if r.err == nil && r.off != len(r.b) {
		r.err = fail(StatusInvalidCommand, "%d unexpected trailing bytes", len(r.b)-r.off)
	}
	return r.err
}

// ident is a stream/topic/group/consumer identifier: numeric id or name.
type ident struct {
	numeric bool
	id      uint32
	name    string
}

func (i ident) String() string {
	if i.numeric {
		return fmt.Sprintf("#%d", i.id)
	}
	return fmt.Sprintf("%q", i.name)
}

func (i ident) key() string {
	if i.numeric {
		return fmt.Sprintf("n:%d", i.id)
	}
	return "s:" + i.name
}

type consumerRef struct {
	group bool
	id    ident
}

func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func appendName(b []byte, s string) []byte {
	b = append(b, byte(len(s)))
	return append(b, s...)
}

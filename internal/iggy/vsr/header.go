package vsr

import (
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"
)

// HeaderSize is the size of every header; a frame's size field counts it.
const HeaderSize = 256

// MaxFrameSize is the server's default frame ceiling (64 MiB).
const MaxFrameSize = 64 << 20

// Frame kinds, the command byte at offset 60.
const (
	CommandRequest  uint8 = 5
	CommandReply    uint8 = 8
	CommandEviction uint8 = 13
)

// Operation is the operation byte of a request (offset 176).
type Operation uint8

// Operations a client sends.
const (
	OpRegister       Operation = 1
	OpNonReplicated  Operation = 2
	OpLogout         Operation = 3
	OpCreateStream   Operation = 128
	OpDeleteStream   Operation = 130
	OpCreateTopic    Operation = 132
	OpDeleteTopic    Operation = 134
	OpCreateGroup    Operation = 139
	OpJoinGroup      Operation = 148
	OpLeaveGroup     Operation = 149
	OpSendMessages   Operation = 160
	OpStoreOffset    Operation = 161
	OpDeleteOffset   Operation = 162
	opInternalFirst  Operation = 64
	opInternalLast   Operation = 127
	opMetadataFirst  Operation = 128
	opMetadataLast   Operation = 159
	opPartitionFirst Operation = 160
	opPartitionLast  Operation = 162
)

// Replicated reports whether op takes the next request number (every
// operation but Register and NonReplicated).
func (op Operation) Replicated() bool { return op != OpRegister && op != OpNonReplicated }

// ResultFramed reports whether a successful reply to op starts with a
// result section (see SplitResult): metadata operations, offset writes,
// and a non-empty Register reply.
func (op Operation) ResultFramed() bool {
	return op == OpRegister || op >= opMetadataFirst && op <= opMetadataLast || op == OpStoreOffset || op == OpDeleteOffset
}

// Command codes the sink and its tests use. NonReplicated requests carry
// theirs at header offset 196; the others are named by their operation.
const (
	CodePing            uint32 = 1
	CodeClusterMetadata uint32 = 12
	CodeBindSession     uint32 = 15 // 0.12
	CodeLogout          uint32 = 39
	CodeLogin           uint32 = 40
	CodeLoginPAT        uint32 = 45
	CodePoll            uint32 = 100
	CodeSend            uint32 = 101
	CodePartitionRoute  uint32 = 105 // 0.12
	CodeGetOffset       uint32 = 120
	CodeStoreOffset     uint32 = 121
	CodeDeleteOffset    uint32 = 122
	CodeGetStream       uint32 = 200
	CodeCreateStream    uint32 = 202
	CodeDeleteStream    uint32 = 203
	CodeGetTopic        uint32 = 300
	CodeCreateTopic     uint32 = 302
	CodeDeleteTopic     uint32 = 303
	CodeGetGroup        uint32 = 600
	CodeGetGroups       uint32 = 601
	CodeCreateGroup     uint32 = 602
	CodeJoinGroup       uint32 = 604
	CodeLeaveGroup      uint32 = 605
	CodeSyncGroup       uint32 = 606
	legacyCodeLogin     uint32 = 38
	legacyCodeLoginPAT  uint32 = 44
)

// OperationOf is the operation that carries code: replicated commands
// have one operation each, reads are NonReplicated. ok is false for a code
// this package does not know.
func OperationOf(code uint32) (op Operation, ok bool) {
	switch code {
	case CodeLogin, CodeLoginPAT:
		return OpRegister, true
	case CodeLogout:
		return OpLogout, true
	case CodeCreateStream:
		return OpCreateStream, true
	case CodeDeleteStream:
		return OpDeleteStream, true
	case CodeCreateTopic:
		return OpCreateTopic, true
	case CodeDeleteTopic:
		return OpDeleteTopic, true
	case CodeCreateGroup:
		return OpCreateGroup, true
	case CodeJoinGroup:
		return OpJoinGroup, true
	case CodeLeaveGroup:
		return OpLeaveGroup, true
	case CodeSend:
		return OpSendMessages, true
	case CodeStoreOffset:
		return OpStoreOffset, true
	case CodeDeleteOffset:
		return OpDeleteOffset, true
	case CodePing, CodeClusterMetadata, CodeBindSession, CodePoll, CodePartitionRoute, CodeGetOffset,
		CodeGetStream, CodeGetTopic, CodeGetGroup, CodeGetGroups, CodeSyncGroup:
		return OpNonReplicated, true
	}
	return 0, false
}

// CodeOf is the command code a request header names: its code field for
// NonReplicated, else the code its operation implies (0 when unknown).
func CodeOf(h *RequestHeader) uint32 {
	switch h.Operation {
	case OpNonReplicated:
		return h.Code
	case OpRegister:
		return CodeLogin // or CodeLoginPAT: the body's shape tells
	case OpLogout:
		return CodeLogout
	case OpCreateStream:
		return CodeCreateStream
	case OpDeleteStream:
		return CodeDeleteStream
	case OpCreateTopic:
		return CodeCreateTopic
	case OpDeleteTopic:
		return CodeDeleteTopic
	case OpCreateGroup:
		return CodeCreateGroup
	case OpJoinGroup:
		return CodeJoinGroup
	case OpLeaveGroup:
		return CodeLeaveGroup
	case OpSendMessages:
		return CodeSend
	case OpStoreOffset:
		return CodeStoreOffset
	case OpDeleteOffset:
		return CodeDeleteOffset
	}
	return 0
}

// U128 is a little-endian 128-bit value (client ids, checksums).
type U128 [16]byte

// IsZero reports whether u is 0.
func (u U128) IsZero() bool { return u == U128{} }

// U128From widens v.
func U128From(v uint64) U128 {
	var u U128
	binary.LittleEndian.PutUint64(u[:8], v)
	return u
}

func (u U128) String() string {
	return fmt.Sprintf("%016x%016x", binary.LittleEndian.Uint64(u[8:]), binary.LittleEndian.Uint64(u[:8]))
}

// RequestHeader is the header of a client request (command 5).
type RequestHeader struct {
	// Size is the whole frame's size, this header included.
	Size            uint32
	Client          U128
	RequestChecksum U128
	Request         uint64
	Operation       Operation
	Session         uint64
	UserID          uint32
	// Code is the command code; on the wire only NonReplicated requests
	// carry it.
	Code uint32
	// Partition context (0.12): the incarnation and owner generation the
	// request is meant for, and the metadata op it must see.
	PartitionIncarnation uint64
	OwnerGeneration      uint64
	MinimumMetadataOp    uint64
}

// Header field offsets.
const (
	offSize      = 48
	offCommand   = 60
	offClient    = 128
	offReqSum    = 144
	offRequest   = 168
	offOperation = 176
	offSession   = 184
	offUserID    = 192
	offCode      = 196
	offReqInc    = 200
	offReqGen    = 208
	offReqMinOp  = 216

	offReplyReqSum    = 128
	offReplyContext   = 144
	offReplyClient    = 160
	offReplyOp        = 176
	offReplyCommit    = 184
	offReplyTimestamp = 192
	offReplyRequest   = 200
	offReplyOperation = 208
	offReplyStatus    = 216
	offReplyCommitted = 220
	offReplyInc       = 224

	offEvictClient = 128
	offEvictMax    = 144
	offEvictMin    = 148
	offEvictReason = 255
)

// AppendRequestHeader appends h as 256 bytes. The code goes at offset 196
// for NonReplicated requests only; in 0.12 the partition context follows.
func AppendRequestHeader(dst []byte, d Dialect, h *RequestHeader) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	b := dst[start:]
	le.PutUint32(b[offSize:], h.Size)
	b[offCommand] = CommandRequest
	copy(b[offClient:], h.Client[:])
	copy(b[offReqSum:], h.RequestChecksum[:])
	le.PutUint64(b[offRequest:], h.Request)
	b[offOperation] = byte(h.Operation)
	le.PutUint64(b[offSession:], h.Session)
	le.PutUint32(b[offUserID:], h.UserID)
	if h.Operation == OpNonReplicated {
		le.PutUint32(b[offCode:], h.Code)
	}
	if d >= V012 {
		le.PutUint64(b[offReqInc:], h.PartitionIncarnation)
		le.PutUint64(b[offReqGen:], h.OwnerGeneration)
		le.PutUint64(b[offReqMinOp:], h.MinimumMetadataOp)
	}
	return dst
}

// DecodeRequestHeader reads a request header (command 5). It checks the
// frame's shape, not the session rules (see ValidateRequest).
func DecodeRequestHeader(b []byte, d Dialect) (RequestHeader, error) {
	var h RequestHeader
	if len(b) < HeaderSize {
		return h, malformed("request header", "%d bytes, want %d", len(b), HeaderSize)
	}
	if c := b[offCommand]; c != CommandRequest {
		return h, malformed("request header", "command %d, want %d (request)", c, CommandRequest)
	}
	h.Size = le.Uint32(b[offSize:])
	if h.Size < HeaderSize || h.Size > MaxFrameSize {
		return h, malformed("request header", "frame size %d outside %d..%d", h.Size, HeaderSize, MaxFrameSize)
	}
	copy(h.Client[:], b[offClient:])
	copy(h.RequestChecksum[:], b[offReqSum:])
	h.Request = le.Uint64(b[offRequest:])
	h.Operation = Operation(b[offOperation])
	h.Session = le.Uint64(b[offSession:])
	h.UserID = le.Uint32(b[offUserID:])
	h.Code = le.Uint32(b[offCode:])
	if d >= V012 {
		h.PartitionIncarnation = le.Uint64(b[offReqInc:])
		h.OwnerGeneration = le.Uint64(b[offReqGen:])
		h.MinimumMetadataOp = le.Uint64(b[offReqMinOp:])
	}
	return h, nil
}

// ValidateRequest applies a server's checks of a request header: a
// non-zero client, a client operation, and the session rules of Register
// and of everything else. A server drops a request that fails them without
// a reply.
func ValidateRequest(h *RequestHeader) error {
	switch {
	case h.Client.IsZero():
		return malformed("request header", "client id 0")
	case h.Operation == 0:
		return malformed("request header", "operation 0")
	case h.Operation >= opInternalFirst && h.Operation <= opInternalLast:
		return malformed("request header", "internal operation %d from a client", h.Operation)
	case h.Operation == OpRegister && (h.Session != 0 || h.Request != 0):
		return malformed("request header", "register with session %d, request %d (both must be 0)", h.Session, h.Request)
	case h.Operation != OpRegister && h.Operation != OpNonReplicated && (h.Session == 0 || h.Request == 0):
		return malformed("request header", "operation %d with session %d, request %d (both must be > 0)", h.Operation, h.Session, h.Request)
	}
	return nil
}

// ReplyHeader is the header of a server reply (command 8).
type ReplyHeader struct {
	Size            uint32
	RequestChecksum U128
	Client          U128
	Op, Commit      uint64
	Timestamp       uint64
	Request         uint64
	Operation       Operation
	// Status is an Iggy error code decided before commit (0 = none); the
	// body is then empty.
	Status uint32
	// Committed (0.12) flags a committed result; PartitionIncarnation
	// (0.12) is the incarnation the reply was served from.
	Committed            bool
	PartitionIncarnation uint64
}

// AppendReplyHeader appends h as 256 bytes.
func AppendReplyHeader(dst []byte, d Dialect, h *ReplyHeader) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	b := dst[start:]
	le.PutUint32(b[offSize:], h.Size)
	b[offCommand] = CommandReply
	copy(b[offReplyReqSum:], h.RequestChecksum[:])
	copy(b[offReplyClient:], h.Client[:])
	le.PutUint64(b[offReplyOp:], h.Op)
	le.PutUint64(b[offReplyCommit:], h.Commit)
	le.PutUint64(b[offReplyTimestamp:], h.Timestamp)
	le.PutUint64(b[offReplyRequest:], h.Request)
	b[offReplyOperation] = byte(h.Operation)
	le.PutUint32(b[offReplyStatus:], h.Status)
	if d >= V012 {
		if h.Committed {
			b[offReplyCommitted] = 1
		}
		le.PutUint64(b[offReplyInc:], h.PartitionIncarnation)
	}
	return dst
}

// FrameKind reads the command byte and size of a received 256-byte header
// and checks the size against the frame kind and limit (a reply of more
// than limit bytes is refused before its body is read).
func FrameKind(b []byte, limit uint32) (command uint8, size uint32, err error) {
	if len(b) < HeaderSize {
		return 0, 0, malformed("frame header", "%d bytes, want %d", len(b), HeaderSize)
	}
	command, size = b[offCommand], le.Uint32(b[offSize:])
	switch command {
	case CommandReply, CommandRequest:
	case CommandEviction:
		if size != HeaderSize {
			return command, size, malformed("eviction", "size %d, an eviction is exactly %d bytes", size, HeaderSize)
		}
	default:
		return command, size, malformed("frame header", "command %d is not a client frame (5 request, 8 reply, 13 eviction)", command)
	}
	if size < HeaderSize {
		return command, size, malformed("frame header", "size %d below the %d-byte header", size, HeaderSize)
	}
	if size > limit {
		return command, size, &TooLargeError{Size: size, Limit: limit}
	}
	return command, size, nil
}

// DecodeReplyHeader reads a reply header (command 8).
func DecodeReplyHeader(b []byte, d Dialect) (ReplyHeader, error) {
	var h ReplyHeader
	if len(b) < HeaderSize {
		return h, malformed("reply header", "%d bytes, want %d", len(b), HeaderSize)
	}
	if c := b[offCommand]; c != CommandReply {
		return h, malformed("reply header", "command %d, want %d (reply)", c, CommandReply)
	}
	h.Size = le.Uint32(b[offSize:])
	copy(h.RequestChecksum[:], b[offReplyReqSum:])
	copy(h.Client[:], b[offReplyClient:])
	h.Op = le.Uint64(b[offReplyOp:])
	h.Commit = le.Uint64(b[offReplyCommit:])
	h.Timestamp = le.Uint64(b[offReplyTimestamp:])
	h.Request = le.Uint64(b[offReplyRequest:])
	h.Operation = Operation(b[offReplyOperation])
	h.Status = le.Uint32(b[offReplyStatus:])
	if d >= V012 {
		h.Committed = b[offReplyCommitted] == 1
		h.PartitionIncarnation = le.Uint64(b[offReplyInc:])
	}
	return h, nil
}

// EvictionReason says why a server ended a session.
type EvictionReason uint8

// Eviction reasons.
const (
	EvictNoSession               EvictionReason = 1
	EvictClientReleaseTooLow     EvictionReason = 2
	EvictClientReleaseTooHigh    EvictionReason = 3
	EvictInvalidRequestOperation EvictionReason = 4
	EvictInvalidRequestBody      EvictionReason = 5
	EvictInvalidRequestBodySize  EvictionReason = 6
	EvictSessionTooLow           EvictionReason = 7
	EvictSessionReleaseMismatch  EvictionReason = 8
	EvictInvalidCredentials      EvictionReason = 9
	EvictInvalidToken            EvictionReason = 10
	EvictUserInactive            EvictionReason = 11
	EvictSessionError            EvictionReason = 12
	EvictStaleClient             EvictionReason = 13
	EvictIncompatibleProtocol    EvictionReason = 14
	EvictMalformedLogin          EvictionReason = 15
)

var evictionNames = [...]string{
	EvictNoSession:               "no session",
	EvictClientReleaseTooLow:     "client release too low",
	EvictClientReleaseTooHigh:    "client release too high",
	EvictInvalidRequestOperation: "invalid request operation",
	EvictInvalidRequestBody:      "invalid request body",
	EvictInvalidRequestBodySize:  "invalid request body size",
	EvictSessionTooLow:           "session too low",
	EvictSessionReleaseMismatch:  "session release mismatch",
	EvictInvalidCredentials:      "invalid credentials",
	EvictInvalidToken:            "invalid personal access token",
	EvictUserInactive:            "user inactive",
	EvictSessionError:            "session error",
	EvictStaleClient:             "stale client (missed heartbeats)",
	EvictIncompatibleProtocol:    "incompatible protocol version",
	EvictMalformedLogin:          "malformed login",
}

func (r EvictionReason) String() string {
	if int(r) < len(evictionNames) && evictionNames[r] != "" {
		return evictionNames[r]
	}
	return fmt.Sprintf("reason %d", uint8(r))
}

// Eviction is a server's session-terminal frame (command 13, no body).
type Eviction struct {
	Client U128
	// ServerMax and ServerMin are the protocol versions the server
	// accepts; set only for EvictIncompatibleProtocol.
	ServerMax, ServerMin Version
	Reason               EvictionReason
}

// AppendEviction appends e as a 256-byte frame.
func AppendEviction(dst []byte, e *Eviction) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	b := dst[start:]
	le.PutUint32(b[offSize:], HeaderSize)
	b[offCommand] = CommandEviction
	copy(b[offEvictClient:], e.Client[:])
	le.PutUint32(b[offEvictMax:], uint32(e.ServerMax))
	le.PutUint32(b[offEvictMin:], uint32(e.ServerMin))
	b[offEvictReason] = byte(e.Reason)
	return dst
}

// DecodeEviction reads an eviction frame.
func DecodeEviction(b []byte) (Eviction, error) {
	var e Eviction
	if len(b) < HeaderSize || b[offCommand] != CommandEviction {
		return e, malformed("eviction", "not a %d-byte eviction frame", HeaderSize)
	}
	copy(e.Client[:], b[offEvictClient:])
	e.ServerMax = Version(le.Uint32(b[offEvictMax:]))
	e.ServerMin = Version(le.Uint32(b[offEvictMin:]))
	e.Reason = EvictionReason(b[offEvictReason])
	if e.Reason == 0 {
		return e, malformed("eviction", "reason 0")
	}
	return e, nil
}

var le = binary.LittleEndian

// BodyChecksum is the optional request checksum of body: XXH3-64 (seed 0),
// widened to 128 bits. A server that sees a non-zero stamp recomputes it
// and refuses a mismatch with InvalidFormat.
func BodyChecksum(body []byte) U128 { return U128From(xxh3.Hash(body)) }

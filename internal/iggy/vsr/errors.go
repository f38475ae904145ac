package vsr

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every decoding error: bytes that do not
// follow the layout they claim.
var ErrMalformed = errors.New("malformed Iggy frame")

// FormatError says which part of a frame was malformed and how.
type FormatError struct {
	What   string // "poll reply", "topic record", ...
	Detail string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrMalformed, e.What, e.Detail)
}

func (e *FormatError) Unwrap() error { return ErrMalformed }

func malformed(what, format string, args ...any) error {
	return &FormatError{What: what, Detail: fmt.Sprintf(format, args...)}
}

// TooLargeError reports a frame whose size field exceeds what the reader
// accepts; it is refused before its body is read or allocated.
type TooLargeError struct{ Size, Limit uint32 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: frame of %d bytes exceeds the %d-byte limit", ErrMalformed, e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrMalformed }

// Iggy error codes a sink handles (IggyError codes of protocol 0.11/0.12).
const (
	StatusOK                     uint32 = 0
	StatusError                  uint32 = 1
	StatusInvalidCommand         uint32 = 3
	StatusInvalidFormat          uint32 = 4
	StatusFeatureUnavailable     uint32 = 5
	StatusInvalidIdentifier      uint32 = 6
	StatusStaleClient            uint32 = 30
	StatusUnauthenticated        uint32 = 40
	StatusUnauthorized           uint32 = 41
	StatusInvalidCredentials     uint32 = 42
	StatusTransientNotCommitted  uint32 = 57
	StatusTransientNotAccepted   uint32 = 58
	StatusRequestAlreadyApplied  uint32 = 59
	StatusRequestTooOld          uint32 = 85
	StatusHistoryUnavailable     uint32 = 87
	StatusLifecycleBusy          uint32 = 88
	StatusNotPrimary             uint32 = 89
	StatusStreamNotFound         uint32 = 1009
	StatusStreamNameExists       uint32 = 1012
	StatusTopicNotFound          uint32 = 2010
	StatusTopicNameExists        uint32 = 2013
	StatusPartitionNotFound      uint32 = 3007
	StatusOffsetNotFound         uint32 = 3021
	StatusTooManyConsumerOffsets uint32 = 3024
	StatusInvalidOption          uint32 = 4042
	StatusInvalidOffset          uint32 = 4100
	StatusGroupNotFound          uint32 = 5000
	StatusGroupNameExists        uint32 = 5004
	StatusGroupMemberNotFound    uint32 = 5006
	StatusPartitionNotOwned      uint32 = 5009
)

var statusNames = map[uint32]string{
	StatusError:                  "error",
	StatusInvalidCommand:         "invalid command",
	StatusInvalidFormat:          "invalid format",
	StatusFeatureUnavailable:     "feature unavailable",
	StatusInvalidIdentifier:      "invalid identifier",
	StatusStaleClient:            "stale client",
	StatusUnauthenticated:        "unauthenticated",
	StatusUnauthorized:           "unauthorized",
	StatusInvalidCredentials:     "invalid credentials",
	StatusTransientNotCommitted:  "transient: not committed",
	StatusTransientNotAccepted:   "transient: not accepted",
	StatusRequestAlreadyApplied:  "request already applied",
	StatusRequestTooOld:          "request too old",
	StatusHistoryUnavailable:     "history unavailable (partition incarnation)",
	StatusLifecycleBusy:          "lifecycle busy",
	StatusNotPrimary:             "not the partition's primary",
	StatusStreamNotFound:         "stream not found",
	StatusStreamNameExists:       "stream name already exists",
	StatusTopicNotFound:          "topic not found",
	StatusTopicNameExists:        "topic name already exists",
	StatusPartitionNotFound:      "partition not found",
	StatusOffsetNotFound:         "consumer offset not found",
	StatusTooManyConsumerOffsets: "too many consumer offsets",
	StatusInvalidOption:          "invalid option",
	StatusInvalidOffset:          "invalid offset",
	StatusGroupNotFound:          "consumer group not found",
	StatusGroupNameExists:        "consumer group name already exists",
	StatusGroupMemberNotFound:    "consumer group member not found",
	StatusPartitionNotOwned:      "consumer group partition not owned",
}

// StatusText names an Iggy error code ("" when unknown).
func StatusText(code uint32) string { return statusNames[code] }

// ServerError is a request the server refused with an Iggy error code,
// in the reply header's status or in the result section.
type ServerError struct{ Code uint32 }

func (e *ServerError) Error() string {
	if name := StatusText(e.Code); name != "" {
		return fmt.Sprintf("iggy error %d (%s)", e.Code, name)
	}
	return fmt.Sprintf("iggy error %d", e.Code)
}

// IsStatus reports whether err is a ServerError with code.
func IsStatus(err error, code uint32) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Code == code
}

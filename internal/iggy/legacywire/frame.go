package legacywire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Sizes of the framing. All integers are little-endian.
const (
	// HeaderSize is a request's [length:u32][code:u32] and a reply's
	// [status:u32][length:u32].
	HeaderSize = 8
	// CodeSize is the command code a request's length counts.
	CodeSize = 4
)

// ErrShortFrame is a request whose length is below CodeSize: it cannot hold
// its own command code. No SDK writes one.
var ErrShortFrame = errors.New("legacywire: request length below 4, the size of its command code")

// ErrTooLarge is wrapped by a *SizeError.
var ErrTooLarge = errors.New("legacywire: frame larger than allowed")

// SizeError is a payload announced larger than the reader's limit; nothing
// of the payload was read.
type SizeError struct {
	Size  int64
	Limit int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%v: a payload of %d bytes (at most %d)", ErrTooLarge, e.Size, e.Limit)
}

func (e *SizeError) Unwrap() error { return ErrTooLarge }

// RequestHeader is a request's [length:u32][code:u32].
type RequestHeader struct {
	Length uint32 // as sent: the command code's 4 bytes and the payload's
	Code   uint32
}

// PayloadSize is the number of payload bytes after the header (0 for a
// length below CodeSize).
func (h RequestHeader) PayloadSize() int64 { return int64(max(h.Length, CodeSize) - CodeSize) }

// Append appends the header's 8 bytes to b.
func (h RequestHeader) Append(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(b, h.Length), h.Code)
}

// ReplyHeader is a reply's [status:u32][length:u32].
type ReplyHeader struct {
	Status uint32 // 0 is OK, anything else an Iggy error code
	Length uint32
}

// HasBody reports whether a payload follows the header as SDK v0.8.0 reads
// it: only with status 0 and a length above 1. A server sends none with an
// error, and a 1-byte payload is left unread (the stream then loses sync).
func (h ReplyHeader) HasBody() bool { return h.Status == 0 && h.Length > 1 }

// Append appends the header's 8 bytes to b.
func (h ReplyHeader) Append(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(b, h.Status), h.Length)
}

// Put writes the header into b[:8], as in front of a payload built after it.
func (h ReplyHeader) Put(b []byte) {
	binary.LittleEndian.PutUint32(b[0:4], h.Status)
	binary.LittleEndian.PutUint32(b[4:8], h.Length)
}

// ReadRequestHeader reads a request's header. It returns io.EOF only when r
// ends before the header begins, io.ErrUnexpectedEOF when it ends inside it,
// and ErrShortFrame, with the header, for a length below CodeSize (a real
// 0.8.0 server answers that and goes on with the next frame).
func ReadRequestHeader(r io.Reader) (RequestHeader, error) {
	var b [HeaderSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return RequestHeader{}, err
	}
	h := RequestHeader{Length: binary.LittleEndian.Uint32(b[0:4]), Code: binary.LittleEndian.Uint32(b[4:8])}
	if h.Length < CodeSize {
		return h, ErrShortFrame
	}
	return h, nil
}

// ReadRequest reads a request whose payload is at most limit bytes
// (math.MaxInt: no limit but the length field's) into buf (reused from
// length 0; see ReadPayload) and returns the header and the payload. A longer payload is a *SizeError and a length below CodeSize
// ErrShortFrame, each with the header and no payload read: the caller may
// skip PayloadSize bytes to go on.
func ReadRequest(r io.Reader, buf []byte, limit int) (RequestHeader, []byte, error) {
	h, err := ReadRequestHeader(r)
	if err != nil {
		return h, buf[:0], err
	}
	n := h.PayloadSize()
	if n > int64(limit) {
		return h, buf[:0], &SizeError{Size: n, Limit: limit}
	}
	p, err := ReadPayload(r, buf, int(n))
	return h, p, err
}

// ReadReplyHeader reads a reply's header: io.EOF only when r ends before
// it begins, io.ErrUnexpectedEOF when it ends inside it.
func ReadReplyHeader(r io.Reader) (ReplyHeader, error) {
	var b [HeaderSize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return ReplyHeader{}, err
	}
	return ReplyHeader{Status: binary.LittleEndian.Uint32(b[0:4]), Length: binary.LittleEndian.Uint32(b[4:8])}, nil
}

// ReadReply reads a reply as SDK v0.8.0 does, its payload (into buf, see
// ReadPayload) only when HasBody. A payload above limit bytes (math.MaxInt:
// no limit but the length field's) is a
// *SizeError, with the header and nothing of the payload read.
func ReadReply(r io.Reader, buf []byte, limit int) (ReplyHeader, []byte, error) {
	h, err := ReadReplyHeader(r)
	if err != nil || !h.HasBody() {
		return h, buf[:0], err
	}
	if n := int64(h.Length); n > int64(limit) {
		return h, buf[:0], &SizeError{Size: n, Limit: limit}
	}
	p, err := ReadPayload(r, buf, int(h.Length))
	return h, p, err
}

// growStep is the least ReadPayload grows its buffer by.
const growStep = 64 << 10

// ReadPayload reads n bytes into buf (from length 0), growing it only as
// the bytes arrive: a length field alone makes it allocate at most 64 KiB,
// and never more than twice what arrived. A payload cut short is
// io.ErrUnexpectedEOF, with what arrived.
func ReadPayload(r io.Reader, buf []byte, n int) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), growStep))
		buf = slices.Grow(buf, chunk)
		got, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+got]
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// AppendRequest appends a request frame to b.
func AppendRequest(b []byte, code uint32, payload []byte) []byte {
	b = RequestHeader{Length: uint32(len(payload) + CodeSize), Code: code}.Append(b)
	return append(b, payload...)
}

// WriteRequest writes a request frame in one Write.
func WriteRequest(w io.Writer, code uint32, payload []byte) error {
	_, err := w.Write(AppendRequest(make([]byte, 0, HeaderSize+len(payload)), code, payload))
	return err
}

// AppendReply appends a reply frame to b. It writes what it is given: a
// payload with an error status, or of 1 byte, is what a hostile server does.
func AppendReply(b []byte, status uint32, payload []byte) []byte {
	b = ReplyHeader{Status: status, Length: uint32(len(payload))}.Append(b)
	return append(b, payload...)
}

// WriteReply writes a reply frame in one Write.
func WriteReply(w io.Writer, status uint32, payload []byte) error {
	_, err := w.Write(AppendReply(make([]byte, 0, HeaderSize+len(payload)), status, payload))
	return err
}

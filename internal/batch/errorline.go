package batch

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// errorLines renders the lines of an error object (invalid_payload =
// "error_object"): one JSON object per rejected record, in offset order,
//
//	{"offset":7,"timestamp":"2024-03-16T14:02:31.250000Z","stream":"app",
//	 "topic":"logs","partition_id":1,"reason":"payload is not valid JSON (at byte 3 of 9)",
//	 "headers":{…},"payload":"{\"a\":"}
//
// headers as the JSON formats render them (with include_headers, when the
// message has valid ones); the payload as a JSON string when it is valid
// UTF-8, else as "payload_base64". The timestamp keeps its microseconds:
// the line is for reprocessing. It keeps scratch buffers: one per goroutine.
type errorLines struct {
	// metaTail is `","stream":…,"topic":…,"partition_id":N,"reason":`.
	metaTail []byte
	headers  bool
	hs       headerSet
}

func newErrorLines(p Partition, headers bool) errorLines {
	t := []byte(`","stream":`)
	t = jsonscan.AppendString(t, []byte(p.Stream))
	t = append(t, `,"topic":`...)
	t = jsonscan.AppendString(t, []byte(p.Topic))
	t = append(t, `,"partition_id":`...)
	t = strconv.AppendUint(t, uint64(p.ID), 10)
	t = append(t, `,"reason":`...)
	return errorLines{metaTail: t, headers: headers}
}

// append renders one line for m, whose rejected payload is payload.
func (l *errorLines) append(dst []byte, m *Message, payload []byte, reason string) []byte {
	dst = append(dst, `{"offset":`...)
	dst = strconv.AppendUint(dst, m.Offset, 10)
	dst = append(dst, `,"timestamp":"`...)
	dst = appendRFC3339Micros(dst, m.Timestamp)
	dst = append(dst, l.metaTail...)
	dst = jsonscan.AppendString(dst, []byte(reason))
	if l.headers && len(m.Headers) > 0 && l.hs.parse(m.Headers) == nil {
		dst = append(dst, `,"headers":`...)
		dst = l.hs.appendObject(dst)
	}
	if utf8.Valid(payload) {
		dst = append(dst, `,"payload":`...)
		dst = jsonscan.AppendString(dst, payload)
	} else {
		dst = append(dst, `,"payload_base64":`...)
		dst = jsonscan.AppendBase64(dst, payload)
	}
	return append(dst, '}', '\n')
}

// invalidReason says why a payload is not JSON, as InvalidPayloadError does.
func invalidReason(at, n int) string {
	return fmt.Sprintf("%v (at byte %d of %d)", ErrInvalidJSON, at, n)
}

// appendRFC3339Micros writes the server timestamp (µs since the epoch) as
// RFC 3339 with six fraction digits and a Z suffix; out-of-range instants
// become the epoch, as appendRFC3339Seconds does.
func appendRFC3339Micros(dst []byte, micros uint64) []byte {
	if micros/1_000_000 > maxRFC3339Sec {
		micros = 0
	}
	dst = appendRFC3339Seconds(dst, micros)
	dst = dst[:len(dst)-1] // the 'Z'
	f := micros % 1_000_000
	return append(dst, '.',
		byte('0'+f/100000), byte('0'+f/10000%10), byte('0'+f/1000%10),
		byte('0'+f/100%10), byte('0'+f/10%10), byte('0'+f%10), 'Z')
}

package archive

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// errorLine is one line of an error object (invalid_payload =
// "error_object"; batch's errorLines): the rejected message as it came.
type errorLine struct {
	Offset        *uint64                    `json:"offset"`
	Timestamp     string                     `json:"timestamp"`
	Headers       map[string]json.RawMessage `json:"headers"`
	Payload       *string                    `json:"payload"`
	PayloadBase64 *string                    `json:"payload_base64"`
}

// DecodeErrors reads an error object's lines back into records: each with
// its offset, its time to the microsecond and the payload's own bytes (the
// line keeps them as a string, or as base64 when they are not UTF-8).
func DecodeErrors(body []byte) ([]Record, error) {
	var out []Record
	err := eachLine(body, func(n int, line []byte) error {
		var l errorLine
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("archive: error object line %d: %w", n, err)
		}
		if l.Offset == nil {
			return fmt.Errorf("archive: error object line %d has no offset", n)
		}
		r := Record{Offset: *l.Offset, HasOffset: true}
		if l.Timestamp != "" {
			t, err := time.Parse(time.RFC3339Nano, l.Timestamp)
			if err != nil {
				return fmt.Errorf("archive: error object line %d: timestamp %q: %w", n, l.Timestamp, err)
			}
			if us := t.UnixMicro(); us > 0 {
				r.Timestamp = uint64(us)
			}
		}
		if len(l.Headers) > 0 {
			h, err := jsonHeaders(l.Headers)
			if err != nil {
				return fmt.Errorf("archive: error object line %d: %w", n, err)
			}
			r.Headers = h
		}
		switch {
		case l.Payload != nil:
			r.Payload = []byte(*l.Payload)
		case l.PayloadBase64 != nil:
			p, err := base64.StdEncoding.DecodeString(*l.PayloadBase64)
			if err != nil {
				return fmt.Errorf("archive: error object line %d: payload_base64: %w", n, err)
			}
			r.Payload = p
		default:
			return fmt.Errorf("archive: error object line %d has no payload", n)
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

package archive

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// recordDecoder reads JSON records in one validating scan each, which
// notes the record's members (encoding/json took four times as long).
type recordDecoder struct {
	sc     jsonscan.Scanner
	buf    []byte
	layout Layout
}

func newRecordDecoder(l Layout) *recordDecoder {
	d := &recordDecoder{layout: l}
	d.sc.Record = true
	d.sc.MaxDepth = jsonscan.MaxDepthLimit
	return d
}

// record reads one record (a JSON object).
func (d *recordDecoder) record(line []byte) (Record, error) {
	var ok bool
	var at int
	d.buf, ok, at = d.sc.AppendCompact(d.buf[:0], line)
	if !ok {
		return Record{}, fmt.Errorf("not a record: not JSON at byte %d", at)
	}
	b := d.buf
	if len(b) == 0 || b[0] != '{' {
		return Record{}, errors.New("not a record: not a JSON object")
	}
	var r Record
	var payload []byte
	for _, m := range d.sc.Members {
		key, val := b[m.KeyStart+1:m.KeyEnd-1], b[m.ValStart:m.ValEnd]
		switch string(key) {
		case "offset":
			n, err := strconv.ParseUint(string(val), 10, 64)
			if err != nil {
				return Record{}, fmt.Errorf("offset %s: %w", val, err)
			}
			r.Offset, r.HasOffset = n, true
		case "timestamp":
			ts, err := timestamp(val)
			if err != nil {
				return Record{}, err
			}
			r.Timestamp = ts
		case "headers":
			var h map[string]json.RawMessage
			if err := json.Unmarshal(val, &h); err != nil {
				return Record{}, fmt.Errorf("headers: %w", err)
			}
			if len(h) > 0 {
				hb, err := jsonHeaders(h)
				if err != nil {
					return Record{}, err
				}
				r.Headers = hb
			}
		case "payload":
			payload = val
		}
	}
	if payload == nil {
		return Record{}, errors.New(`the record has no "payload"`)
	}
	p, err := d.payload(payload)
	if err != nil {
		return Record{}, err
	}
	r.Payload = p
	return r, nil
}

// payload turns a record's payload value back into the payload's bytes
// (payloadOf's rules), a copy the record owns.
func (d *recordDecoder) payload(v []byte) ([]byte, error) {
	switch d.layout.Schema {
	case "", batch.SchemaJSON:
		return bytes.Clone(v), nil
	case batch.SchemaText:
		if v[0] != '"' {
			return nil, errors.New("a text payload is not a JSON string")
		}
		return unquote(v), nil
	}
	if v[0] == '"' {
		s := unquote(v)
		if b, err := base64.StdEncoding.Strict().AppendDecode(nil, s); err == nil {
			return b, nil
		}
	}
	return bytes.Clone(v), nil
}

func unquote(lit []byte) []byte {
	if !jsonscan.NeedsUnquote(lit) {
		return bytes.Clone(lit[1 : len(lit)-1])
	}
	return jsonscan.AppendUnquote(nil, lit)
}

// timestamp reads a record's "timestamp" (RFC 3339, the sink's at
// seconds) as µs since the epoch; 0 for times before it.
func timestamp(v []byte) (uint64, error) {
	if len(v) < 2 || v[0] != '"' {
		return 0, fmt.Errorf("timestamp %s is not a string", v)
	}
	s := string(v[1 : len(v)-1])
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, fmt.Errorf("timestamp %q: %w", s, err)
	}
	if us := t.UnixMicro(); us > 0 {
		return uint64(us), nil
	}
	return 0, nil
}

package archive

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/klauspost/compress/zstd"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// Record is one message as an object holds it.
type Record struct {
	// Offset is the message's offset when HasOffset (the record says it).
	Offset    uint64
	HasOffset bool
	// Timestamp is the server time in µs (0: the object does not hold it).
	Timestamp uint64
	// Headers are user headers in Iggy's wire form (batch.Message's); nil
	// when the record has none.
	Headers []byte
	Payload []byte
}

// Layout is how the sink wrote an object: its configuration's format,
// compression and schema, and whether records carry metadata and headers.
type Layout struct {
	Format      batch.Format
	Compression batch.Compression
	Schema      batch.Schema
	// Metadata and Headers are include_metadata and include_headers: they
	// say which Parquet columns are the message's rather than the payload's.
	Metadata, Headers bool
}

// ErrUnsplittable is a raw object of more than one message whose schema
// is not json: its payloads run together with no delimiter, so where one
// ends is not in the object.
var ErrUnsplittable = errors.New("a raw object holds its payloads with no delimiter: only one of schema json can be split into messages")

// MaxObjectBytes bounds what one object may decompress to (1 GiB), so a
// hostile object cannot take the memory.
const MaxObjectBytes = 1 << 30

// Decode reads the records of one object's stored bytes, in their order.
// messages is how many offsets the object's range covers: a raw object of
// a schema other than json is one record only when it is 1.
func Decode(body []byte, l Layout, messages uint64) ([]Record, error) {
	if l.Format != batch.FormatParquet {
		var err error
		if body, err = decompress(body, l.Compression); err != nil {
			return nil, err
		}
	}
	switch l.Format {
	case batch.FormatJSONLines:
		return decodeLines(body, l)
	case batch.FormatJSONArray:
		return decodeArray(body, l)
	case batch.FormatRaw:
		return decodeRaw(body, l, messages)
	case batch.FormatParquet:
		return decodeParquet(body, l)
	}
	return nil, fmt.Errorf("archive: output format %q cannot be read back", l.Format)
}

func decompress(body []byte, c batch.Compression) ([]byte, error) {
	var r io.Reader
	switch c {
	case "", batch.CompressionNone:
		return body, nil
	case batch.CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("archive: gzip: %w", err)
		}
		r = zr
	case batch.CompressionZstd:
		zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxObjectBytes))
		if err != nil {
			return nil, fmt.Errorf("archive: zstd: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("archive: compression %q cannot be read back", c)
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("archive: decompress (%s): %w", c, err)
	}
	if len(out) > MaxObjectBytes {
		return nil, fmt.Errorf("archive: the object decompresses to more than %d bytes", MaxObjectBytes)
	}
	return out, nil
}

func decodeLines(body []byte, l Layout) ([]Record, error) {
	d := newRecordDecoder(l)
	out := make([]Record, 0, bytes.Count(body, []byte{'\n'}))
	err := eachLine(body, func(n int, line []byte) error {
		r, err := d.record(line)
		if err != nil {
			return fmt.Errorf("archive: line %d: %w", n, err)
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachLine calls fn with each line of body that is not blank, numbered
// from 1, until fn fails.
func eachLine(body []byte, fn func(n int, line []byte) error) error {
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	return nil
}

func decodeArray(body []byte, l Layout) ([]Record, error) {
	d := newRecordDecoder(l)
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '[' {
		return nil, errors.New("archive: the object is not a JSON array")
	}
	var out []Record
	for i = jsonscan.SkipSpace(body, i+1); ; {
		if i < len(body) && body[i] == ']' && len(out) == 0 {
			i++
			break
		}
		j, err := jsonscan.SkipValue(body, i)
		if err != nil {
			return nil, fmt.Errorf("archive: record %d: %w", len(out)+1, err)
		}
		r, err := d.record(body[i:j])
		if err != nil {
			return nil, fmt.Errorf("archive: record %d: %w", len(out)+1, err)
		}
		out = append(out, r)
		i = jsonscan.SkipSpace(body, j)
		if i < len(body) && body[i] == ',' {
			i = jsonscan.SkipSpace(body, i+1)
			continue
		}
		if i < len(body) && body[i] == ']' {
			i++
			break
		}
		return nil, fmt.Errorf("archive: the JSON array does not go on after record %d", len(out))
	}
	if jsonscan.SkipSpace(body, i) != len(body) {
		return nil, errors.New("archive: bytes after the JSON array")
	}
	return out, nil
}

// Iggy user-header kinds the records' values come back as.
const (
	kindString = 2
	kindBool   = 3
	kindInt64  = 7
	kindUint64 = 12
	kindDouble = 15
)

// jsonHeaders encodes a record's headers object in Iggy's wire form, by key.
func jsonHeaders(h map[string]json.RawMessage) ([]byte, error) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []byte
	for _, k := range keys {
		kind, val, err := headerValue(h[k])
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", k, err)
		}
		out = AppendHeader(out, k, kind, val)
	}
	return out, nil
}

func headerValue(v json.RawMessage) (byte, []byte, error) {
	switch {
	case len(v) == 0:
		return 0, nil, errors.New("no value")
	case v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return 0, nil, err
		}
		return kindString, []byte(s), nil
	case string(v) == "true":
		return kindBool, []byte{1}, nil
	case string(v) == "false":
		return kindBool, []byte{0}, nil
	}
	s := string(v)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return kindInt64, binary.LittleEndian.AppendUint64(nil, uint64(i)), nil
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return kindUint64, binary.LittleEndian.AppendUint64(nil, u), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return kindDouble, binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)), nil
	}
	// Any other value (an object, say) keeps its JSON text.
	return kindString, bytes.Clone(v), nil
}

// AppendHeader appends one user header, a String key and a value of kind,
// in Iggy's wire form.
func AppendHeader(dst []byte, key string, kind byte, value []byte) []byte {
	dst = append(dst, kindString)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = append(dst, kind)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// decodeRaw splits a raw object: a sequence of JSON values under schema
// json; otherwise the whole object is one payload, which it is only when
// the object holds one message.
func decodeRaw(body []byte, l Layout, messages uint64) ([]Record, error) {
	switch l.Schema {
	case "", batch.SchemaJSON:
		dec := json.NewDecoder(bytes.NewReader(body))
		var out []Record
		for {
			var v json.RawMessage
			err := dec.Decode(&v)
			if err == io.EOF {
				return out, nil
			}
			if err != nil {
				return nil, fmt.Errorf("archive: raw object, value %d: %w", len(out)+1, err)
			}
			out = append(out, Record{Payload: bytes.Clone(v)})
		}
	}
	if messages != 1 {
		return nil, fmt.Errorf("archive: %w (schema %s, %d messages)", ErrUnsplittable, l.Schema, messages)
	}
	return []Record{{Payload: bytes.Clone(body)}}, nil
}

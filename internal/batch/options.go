package batch

import (
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// Format is an object's output format (plugin_config output_format).
type Format string

// Output formats.
const (
	FormatJSONLines Format = "json_lines"
	FormatJSONArray Format = "json_array"
	FormatRaw       Format = "raw"
)

// Ext is the object name extension of f without a compression suffix.
func (f Format) Ext() string {
	switch f {
	case FormatJSONLines:
		return "jsonl"
	case FormatJSONArray:
		return "json"
	}
	return "bin"
}

// Stream schemas ([[streams]] schema).
const (
	SchemaJSON       = "json"
	SchemaText       = "text"
	SchemaRaw        = "raw"
	SchemaProto      = "proto"
	SchemaFlatbuffer = "flatbuffer"
	SchemaAvro       = "avro"
)

// What to do with a payload that is not JSON under schema json.
const (
	InvalidBase64 = "base64"
	InvalidFail   = "fail"
)

// Options selects how records are rendered.
type Options struct {
	Format          Format
	Schema          string // "json" | "text" | "raw" | "proto" | "flatbuffer" | "avro"
	IncludeMetadata bool
	IncludeHeaders  bool
	// InvalidPayload: "base64" (or "") keeps a payload that is not valid JSON
	// under schema json as a base64 string and counts it; "fail" makes
	// AppendRecord return an *InvalidPayloadError.
	InvalidPayload string
	// Transformer is optional; it is applied to JSON payloads (schema json,
	// and raw/proto/flatbuffer/avro payloads that are JSON objects) before
	// encoding.
	Transformer Transformer
	// MaxJSONDepth is the deepest nesting a payload may have to count as
	// JSON (plugin_config max_json_depth); 0 means jsonscan.DefaultMaxDepth
	// (128). A deeper payload is invalid: base64 or an error, per InvalidPayload.
	MaxJSONDepth int
}

// Transformer rewrites one JSON payload, which the encoder has validated and
// compacted, and appends the result to dst. The result must be valid,
// compact JSON: the encoder writes it as it is (internal/transform, the
// implementation, fuzzes that property).
type Transformer interface {
	Transform(dst, payload []byte, stream, topic string, partition uint32, offset, timestampMicros uint64) ([]byte, error)
}

// MemberTransformer is a Transformer that can take a JSON object payload
// already split into its top-level members by the encoder's validating
// scan, and so need not scan it again. members is only valid during the call.
type MemberTransformer interface {
	Transformer
	TransformMembers(dst, payload []byte, members []jsonscan.Member, stream, topic string, partition uint32, offset, timestampMicros uint64) ([]byte, error)
}

// ErrInvalidJSON is wrapped by InvalidPayloadError when a payload under
// schema json is not valid JSON.
var ErrInvalidJSON = errors.New("payload is not valid JSON")

// InvalidPayloadError names the message whose payload could not be encoded
// under InvalidPayload "fail". It never carries payload bytes, which may be
// sensitive.
type InvalidPayloadError struct {
	Stream, Topic string
	Partition     uint32
	Offset        uint64
	Err           error
}

func (e *InvalidPayloadError) Error() string {
	return fmt.Sprintf("stream %q topic %q partition %d offset %d: %v", e.Stream, e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *InvalidPayloadError) Unwrap() error { return e.Err }

// TransformError wraps a Transformer failure or a Transformer output that is
// not valid JSON, naming the message.
type TransformError struct {
	Stream, Topic string
	Partition     uint32
	Offset        uint64
	Err           error
}

func (e *TransformError) Error() string {
	return fmt.Sprintf("transform stream %q topic %q partition %d offset %d: %v", e.Stream, e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *TransformError) Unwrap() error { return e.Err }

// ContentType is the HTTP Content-Type of an object in format f.
func (f Format) ContentType() string {
	switch f {
	case FormatJSONLines:
		return "application/x-ndjson"
	case FormatJSONArray:
		return "application/json"
	default:
		return "application/octet-stream"
	}
}

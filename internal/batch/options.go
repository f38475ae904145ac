package batch

import (
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// Format is an object's output format (plugin_config output_format).
type Format string

// Output formats.
const (
	FormatJSONLines Format = "json_lines"
	FormatJSONArray Format = "json_array"
	FormatRaw       Format = "raw"
	// FormatParquet is one Parquet file per object (internal/parquet): its
	// schema inferred from the object's payloads, or pinned.
	FormatParquet Format = "parquet"
)

// Ext is the object name extension of f without a compression suffix.
func (f Format) Ext() string {
	switch f {
	case FormatJSONLines:
		return "jsonl"
	case FormatJSONArray:
		return "json"
	case FormatParquet:
		return "parquet"
	}
	return "bin"
}

// Schema is a stream's payload schema ([[streams]] schema).
type Schema string

// Stream schemas.
const (
	SchemaJSON       Schema = "json"
	SchemaText       Schema = "text"
	SchemaRaw        Schema = "raw"
	SchemaProto      Schema = "proto"
	SchemaFlatbuffer Schema = "flatbuffer"
	SchemaAvro       Schema = "avro"
)

// InvalidPayload is what to do with a payload that is not JSON under
// schema json (or, for Parquet, does not fit a pinned schema)
// (plugin_config invalid_payload).
type InvalidPayload string

// The invalid-payload policies; "" is InvalidBase64.
const (
	InvalidBase64 InvalidPayload = "base64"
	InvalidFail   InvalidPayload = "fail"
	// InvalidErrorObject leaves the record out of the object and writes it
	// to the object's error object instead (ErrorLine).
	InvalidErrorObject InvalidPayload = "error_object"
)

// Options selects how records are rendered.
type Options struct {
	Format          Format
	Schema          Schema
	IncludeMetadata bool
	IncludeHeaders  bool
	// InvalidPayload: "base64" (or "") keeps a payload that is not valid JSON
	// under schema json as a base64 string and counts it; "fail" makes
	// AppendRecord return an *InvalidPayloadError; "error_object" leaves
	// the record out (AppendRecord returns ErrRejected), and Accumulator and
	// ObjectWriter write it to the object's error object, counted too.
	InvalidPayload InvalidPayload
	// Transformer is optional; it is applied to JSON payloads (schema json,
	// and raw/proto/flatbuffer/avro payloads that are JSON objects) before
	// encoding.
	Transformer Transformer
	// MaxJSONDepth is the deepest nesting a payload may have to count as
	// JSON (plugin_config max_json_depth); 0 means jsonscan.DefaultMaxDepth
	// (128). A deeper payload is invalid: base64 or an error, per InvalidPayload.
	MaxJSONDepth int
	// Parquet configures FormatParquet; it is ignored by the other formats.
	Parquet ParquetOptions
}

// ParquetOptions are the Parquet file's own settings (the whole-object
// Compression does not apply to Parquet: a file compresses its pages).
type ParquetOptions struct {
	// Compression of every page: "zstd" (the default when empty), "snappy",
	// "gzip" or "none".
	Compression string
	// RowGroupBytes ends a row group once its input (payload and header
	// bytes) reaches it; 0 means parquet.DefaultRowGroupBytes.
	RowGroupBytes int64
	// PageBytes is a data page's target size before compression; 0 means
	// parquet.DefaultPageBytes.
	PageBytes int
	// Schema pins the payload columns (schema json only); nil infers them
	// per object. A record that does not fit is rejected like an invalid
	// payload, so a pinned schema needs InvalidPayload "error_object" or
	// "fail".
	Schema *parquet.PinnedSchema
	// KeepExtra keeps the members a pinned schema does not name as one JSON
	// object column, payload_extra; false drops them.
	KeepExtra bool
	// Conform, with an inferred schema, gives a partition's files the
	// column types of its table (parquet.Options.Conform); a record whose
	// value does not fit is rejected like an invalid payload, so it needs
	// InvalidPayload "error_object" or "fail". nil keeps inferred types.
	Conform func(stream, topic string) parquet.ConformFunc
	// StatsColumns are the payload fields (dotted paths) whose string min
	// and max the files' statistics carry too (parquet.Options.StatsColumns).
	StatsColumns []string
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

// ErrRejected is what AppendRecord returns, under InvalidPayload
// "error_object", for a message whose record belongs in the error object:
// nothing was appended. Accumulator and ObjectWriter handle it.
var ErrRejected = errors.New("batch: record rejected to the error object")

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
	case FormatParquet:
		return "application/vnd.apache.parquet"
	default:
		return "application/octet-stream"
	}
}

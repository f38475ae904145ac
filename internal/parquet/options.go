package parquet

// Payload schemas (Options.Payload): the stream schema names the sink's
// configuration uses.
const (
	PayloadJSON       = "json"
	PayloadText       = "text"
	PayloadRaw        = "raw"
	PayloadProto      = "proto"      // as raw
	PayloadFlatbuffer = "flatbuffer" // as raw
	PayloadAvro       = "avro"       // as raw
)

// Defaults for the zero Options fields.
const (
	DefaultRowGroupBytes   = 128 << 20 // input bytes (payloads and headers) per row group
	DefaultRowGroupRows    = 1 << 20
	DefaultPageBytes       = 1 << 20
	DefaultDictionaryBytes = 1 << 20
	// pageRows caps a page's level entries, so that the page buffers of a
	// column that encodes to almost nothing stay small.
	pageRows = 20_000
)

// Options selects what a file holds and how it is encoded.
type Options struct {
	// Payload is the stream schema: "json" (fields become columns), "text"
	// (one STRING payload column, ill-formed UTF-8 replaced), "raw", "proto",
	// "flatbuffer" or "avro" (one BYTE_ARRAY payload column).
	Payload string
	// IncludeMetadata adds the columns offset, timestamp, stream, topic and
	// partition_id; IncludeHeaders adds headers, a MAP<STRING,STRING>.
	IncludeMetadata bool
	IncludeHeaders  bool
	// Schema pins the payload columns (schema json only); nil infers them
	// per file from the records given to Observe.
	Schema *PinnedSchema
	// Conform, with an inferred schema, retypes the payload columns before
	// each file is written (a table's types); nil keeps them as inferred.
	Conform ConformFunc
	// KeepExtra keeps the members a pinned schema does not name, as a JSON
	// object in a payload_extra STRING column; false drops them.
	KeepExtra bool
	// Compression of every page: "zstd" (the default when empty), "snappy",
	// "gzip" or "none".
	Compression string
	// A row group ends after the record that brings its input (payload and
	// header bytes) to RowGroupBytes or its rows to RowGroupRows.
	RowGroupBytes int64
	RowGroupRows  int64
	// PageBytes is the target size of a data page before compression.
	PageBytes int
	// DictionaryBytes caps a column chunk's dictionary; past it the chunk
	// continues in PLAIN encoding.
	DictionaryBytes int
	// StatsColumns are columns (dotted paths of payload members) whose
	// string min and max go into the chunk statistics too, as numbers'
	// always do: the payload fields a table partitions by, whose one value
	// per file a table reads from them. Others have none, so that their
	// bytes stay as they were.
	StatsColumns []string
}

// Source names the partition a file's records come from; it fills the
// stream, topic and partition_id columns.
type Source struct {
	Stream    string
	Topic     string
	Partition uint32
}

// Header is one user header as text (batch.HeaderPairs decodes Iggy's wire
// form into these; a batch.HeaderPair converts with Header(p)).
type Header struct {
	Key, Value []byte
}

// Record is one message. The Encoder does not keep any of its slices past
// the call that receives it.
type Record struct {
	Offset    uint64 // written as INT64 (offsets stay far below 2^63)
	Timestamp uint64 // server time, µs since the epoch
	// Headers in any order; nil writes a null headers value (the message has
	// none), an empty non-nil slice an empty map. Of duplicate keys the last
	// one wins; ill-formed UTF-8 is replaced.
	Headers []Header
	Payload []byte
}

package config

import "github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"

// The enumerated options are types of their own, so that a mistyped value
// does not compile: the accepted spellings are the constants below, and the
// loader canonicalises what a file or variable says to one of them. Other
// packages ask the methods at the end rather than comparing values, so a
// rule such as "which limit ends an object" is worked out here once.

// Rotation is plugin_config.file_rotation: which limit ends an object.
type Rotation string

const (
	RotateBySize     Rotation = "size"
	RotateByMessages Rotation = "messages"
)

// Format is plugin_config.output_format: the encoder's own type, whose
// constants (batch.FormatJSONLines, ...) are its values.
type Format = batch.Format

// Compression is plugin_config.compression, the whole object's: the
// encoder's own type (batch.CompressionNone, ...).
type Compression = batch.Compression

// Schema is a stream's schema ([[streams]] schema): the encoder's own type.
type Schema = batch.Schema

const (
	SchemaJSON       = batch.SchemaJSON
	SchemaRaw        = batch.SchemaRaw
	SchemaText       = batch.SchemaText
	SchemaProto      = batch.SchemaProto
	SchemaFlatbuffer = batch.SchemaFlatbuffer
	SchemaAvro       = batch.SchemaAvro
)

// InvalidPayload is plugin_config.invalid_payload: what becomes of a
// payload that is not valid for its schema; the encoder's own type.
type InvalidPayload = batch.InvalidPayload

const (
	InvalidBase64      = batch.InvalidBase64
	InvalidFail        = batch.InvalidFail
	InvalidErrorObject = batch.InvalidErrorObject
)

// ParquetCodec is plugin_config.parquet_compression: a Parquet page's.
type ParquetCodec string

const (
	ParquetZstd   ParquetCodec = "zstd"
	ParquetSnappy ParquetCodec = "snappy"
	ParquetGzip   ParquetCodec = "gzip"
	ParquetNone   ParquetCodec = "none"
)

// TableFormat is plugin_config.table_format.
type TableFormat string

const (
	TableNone    TableFormat = "none"
	TableIceberg TableFormat = "iceberg"
)

// Catalog is plugin_config.iceberg_catalog ("" when table_format is none).
type Catalog string

const (
	CatalogGlue     Catalog = "glue"
	CatalogS3Tables Catalog = "s3tables"
	CatalogREST     Catalog = "rest"
)

// Protocol is iggy.protocol: the Iggy release whose wire protocol to speak.
type Protocol string

const (
	ProtocolAuto Protocol = "auto"
	Protocol08   Protocol = "0.8"
	Protocol09   Protocol = "0.9"
	Protocol010  Protocol = "0.10"
)

// The accepted values of each enumeration, canonical spellings first: the
// loader's and the documentation's one list.
var (
	schemas            = names(SchemaJSON, SchemaRaw, SchemaText, SchemaProto, SchemaFlatbuffer, SchemaAvro)
	fileRotations      = names(RotateBySize, RotateByMessages)
	compressions       = names(batch.CompressionNone, batch.CompressionGzip, batch.CompressionZstd)
	invalidPayloads    = names(InvalidBase64, InvalidFail, InvalidErrorObject)
	parquetCodecs      = names(ParquetZstd, ParquetSnappy, ParquetGzip, ParquetNone)
	tableFormats       = names(TableNone, TableIceberg)
	icebergCatalogs    = names(CatalogGlue, CatalogS3Tables, CatalogREST)
	serverSideEncrypts = []string{"AES256", "aws:kms"}
	checksums          = []string{"crc32c", "md5"}
	iggyProtocols      = names(ProtocolAuto, Protocol08, Protocol09, Protocol010)
)

func names[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// FindsProtocol reports whether the protocol is found at connect
// (iggy.protocol = "auto", or unset).
func (i *Iggy) FindsProtocol() bool { return i.Protocol == "" || i.Protocol == ProtocolAuto }

// Tables reports whether every object is also registered in a table
// (table_format = "iceberg").
func (p *Plugin) Tables() bool { return p.TableFormat == TableIceberg }

// ErrorObjects reports whether rejected records go to error objects
// (invalid_payload = "error_object").
func (p *Plugin) ErrorObjects() bool { return p.InvalidPayload == InvalidErrorObject }

// Compressed reports whether objects are compressed as a whole.
func (p *Plugin) Compressed() bool {
	return p.Compression != "" && p.Compression != batch.CompressionNone
}

// ParquetCompressed reports whether Parquet pages are compressed.
func (p *Plugin) ParquetCompressed() bool { return p.ParquetCompression != ParquetNone }

// Parquet reports whether objects are Parquet files.
func (p *Plugin) Parquet() bool { return p.OutputFormat == batch.FormatParquet }

// MaxObjectBytes is the uncompressed size that ends an object: max_file_size
// under file_rotation = "size", and 0 (no size limit) under "messages",
// where max_messages_per_file alone ends one. The one statement of the
// rotation rule: the drain, the memory budget, `poller render` and the
// pending explanation all take it from here.
func (p *Plugin) MaxObjectBytes() int64 {
	if p.FileRotation == RotateByMessages {
		return 0
	}
	return p.MaxFileSize
}

// Glue reports whether the Iceberg catalog is AWS Glue.
func (p *Plugin) Glue() bool { return p.IcebergCatalog == CatalogGlue }

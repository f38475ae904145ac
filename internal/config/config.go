package config

import (
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// Config is the whole sink configuration: the upstream connector file's
// top-level keys, [[streams]], [plugin_config] and [transforms.*], plus [iggy].
type Config struct {
	Type, Key, Name string
	Enabled         bool
	Version         int64
	Verbose         bool
	Streams         []Stream
	Plugin          Plugin
	Iggy            Iggy
	// Transforms are the [transforms.<type>] tables in file order; their
	// contents are left to the transforms code.
	Transforms []TransformTable
	// Ignored lists keys that mean something only to the upstream runtime
	// (path, plugin_config_format, benchmark, streams[i].avro_schema_path, ...):
	// accepted and not acted on, for the caller to log once.
	Ignored []string
	// ServicesRegion is the region of everything but the bucket: the state
	// table, the credentials secret, the Iceberg catalog and, on Lambda, the
	// function itself. It is AWS_REGION (AWS_DEFAULT_REGION) when set - on
	// Lambda the function's region, where the stack made them - else
	// plugin_config.region, which is the bucket's.
	ServicesRegion string
	// Replaced lists the file's values that environment variables replaced,
	// for the caller to log once: a deployment that sets a variable by
	// mistake must not change the configuration in silence.
	Replaced []Replacement

	origin origin
}

// Stream is one [[streams]] entry: one consumer per topic, all in ConsumerGroup.
type Stream struct {
	Stream        string
	Topics        []string
	Schema        Schema
	BatchLength   uint32
	PollInterval  time.Duration
	ConsumerGroup string
}

// Plugin is [plugin_config]: the upstream S3 sink options plus the sink's own.
type Plugin struct {
	Bucket, Region, Prefix, Endpoint string
	AccessKeyID                      string
	SecretAccessKey                  Secret
	PathTemplate                     string
	Template                         *keys.Template // PathTemplate, parsed at load
	// MaxPartitionValues bounds the distinct payload field values (objects)
	// of one unit under a template with {payload.<path>};
	// DefaultPartitionName is the folder of records without such a value.
	MaxPartitionValues   int64
	DefaultPartitionName string
	FileRotation         Rotation
	// MaxFileSize is the rotation threshold in uncompressed bytes. Upstream caps
	// it at 5 GiB (one PutObject); objects here stream as multipart uploads, so
	// the cap is S3's object limit, 5 TiB.
	MaxFileSize        int64
	MaxMessagesPerFile uint64 // 0 = unset
	OutputFormat       Format
	IncludeMetadata    bool
	IncludeHeaders     bool
	MaxAttempts        int // total upload attempts including the first
	RetryDelay         time.Duration
	PathStyle          *bool // nil = on when Endpoint is set

	StateTable           string
	MaxFileAge           time.Duration
	Compression          Compression
	InvalidPayload       InvalidPayload
	ServerSideEncryption string // "" | AES256 | aws:kms
	SSEKMSKeyID          string
	Checksum             string // crc32c | md5
	PartitionConcurrency int
	LeaseDuration        time.Duration
	DeadlineMargin       time.Duration
	MultipartThreshold   int64
	MaxPollBytes         int64
	PartSize             int64
	MetricsNamespace     string
	// RunTimeout bounds one run (the Lambda's own deadline still applies when shorter).
	RunTimeout time.Duration
	// AWSRequestTimeout bounds the wait for one AWS request's response headers.
	AWSRequestTimeout time.Duration
	// AWSCallTimeout bounds one DynamoDB or Secrets Manager call, retries included.
	AWSCallTimeout time.Duration
	// MaxJSONDepth is the deepest nesting a payload may have to count as JSON.
	MaxJSONDepth int
	// Lambda fan-out: MaxWorkers bounds a cohort (1 = none), WorkerRate
	// (messages/s) sizes it until a rate is measured, SettleTimeout bounds
	// the wait for its members to join.
	MaxWorkers    int
	WorkerRate    int
	SettleTimeout time.Duration

	// ErrorPrefix is where error objects go (invalid_payload =
	// "error_object"), as given ("" for the default: use ErrorsPrefix).
	ErrorPrefix string
	// The Parquet file's own settings (output_format = "parquet").
	ParquetCompression  ParquetCodec
	ParquetRowGroupSize int64 // input bytes per row group
	ParquetPageSize     int64 // a data page's target size before compression
	// ParquetSchema is the pinned schema as given: a file path, inline JSON,
	// or a TOML table (kept as its JSON); PinnedSchema is it parsed.
	ParquetSchema    string
	PinnedSchema     *parquet.PinnedSchema
	ParquetKeepExtra bool

	// Iceberg tables (table_format = "iceberg"): every Parquet object is
	// also registered in a table of IcebergCatalog.
	TableFormat       TableFormat
	IcebergCatalog    Catalog
	IcebergCatalogURI string
	IcebergWarehouse  string
	IcebergNamespace  string
	// IcebergTable is the table name template ({stream}, {topic}).
	IcebergTable string
}

// Iggy is [iggy]: how to reach and authenticate to the Iggy server.
type Iggy struct {
	Address           string
	Protocol          Protocol
	Username          string
	Password          Secret
	Token             Secret
	TLSEnabled        bool
	TLSCAFile         string
	TLSDomain         string
	CredentialsSecret string // Secrets Manager secret name or ARN holding the credentials
	ConnectTimeout    time.Duration
	RequestTimeout    time.Duration // longest wait for one reply
	Keepalive         time.Duration // 0.9/0.10: ping after this much silence
}

// TransformTable is one [transforms.<Type>] table, raw.
type TransformTable struct {
	Type  string
	Table map[string]any
}

// Option describes one configuration option, for documentation and checks.
type Option struct {
	Key     string // TOML key, e.g. "plugin_config.max_file_size"
	Env     string // environment variable, "" when the option has none
	Default string // default as written in TOML ("" = none)
	Doc     string // one-line meaning
}

const (
	mib = 1 << 20
	gib = 1 << 30
	tib = 1 << 40

	// MinLeaseDuration is the shortest lease_duration accepted: the state
	// store refuses leases under a millisecond, and a lease shorter than a
	// second lapses while an object is written, so concurrent runs would take
	// partitions from each other.
	MinLeaseDuration = time.Second
	// MaxJSONDepthLimit is the largest max_json_depth (encoding/json's limit).
	MaxJSONDepthLimit = 10000

	maxObjectSize = 5 * tib // S3's largest object (multipart)
	minPartSize   = 5 * mib // S3's smallest multipart part (but the last)
	maxPartSize   = 5 * gib
)

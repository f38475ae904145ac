package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

type kind uint8

const (
	kString kind = iota
	kSecret
	kBool
	kOptBool
	kInt
	kDuration
	kByteSize
	kStrings
)

// option is one settable value. ptr returns a pointer to its field, in c or,
// for [[streams]] options, in s.
type option struct {
	Option
	table    string // "", "streams", "plugin_config" or "iggy"
	name     string // key inside its table
	kind     kind
	ptr      func(c *Config, s *Stream) any
	nonEmpty bool // an explicit "" is an error
	computed bool // Default documents a value derived at load, not one to parse
	fix      func(c *Config, s *Stream) error
	alias    string // another accepted key inside the table (upstream's serde alias)
	url      bool   // a URL: its userinfo is redacted wherever the value is shown
	tableOK  bool   // a string option that a TOML table may also give (kept as its JSON)
}

func (o *option) secret() bool { return o.kind == kSecret }

var errExpectedString = errors.New("expected a string")

// enum canonicalises a string option case-insensitively against accepted.
func enum(f func(c *Config, s *Stream) *string, accepted ...string) func(c *Config, s *Stream) error {
	return func(c *Config, s *Stream) error {
		p := f(c, s)
		for _, a := range accepted {
			if strings.EqualFold(*p, a) {
				*p = a
				return nil
			}
		}
		return fmt.Errorf("accepted values: %s", strings.Join(accepted, ", "))
	}
}

func intRange(f func(c *Config, s *Stream) int64, lo, hi int64, what string) func(c *Config, s *Stream) error {
	return func(c *Config, s *Stream) error {
		if v := f(c, s); v < lo || v > hi {
			return fmt.Errorf("must be %s", what)
		}
		return nil
	}
}

func durAtLeast(f func(c *Config, s *Stream) *time.Duration, lo time.Duration) func(c *Config, s *Stream) error {
	return func(c *Config, s *Stream) error {
		if *f(c, s) < lo {
			if lo == 1 {
				return errors.New(`must be greater than 0, e.g. "1s"`)
			}
			return fmt.Errorf("must be at least %s", lo)
		}
		return nil
	}
}

func plugin(name string, k kind, def, doc string, ptr func(p *Plugin) any) *option {
	return &option{
		Option: Option{Key: "plugin_config." + name, Env: "SINK_" + strings.ToUpper(name), Default: def, Doc: doc},
		table:  "plugin_config", name: name, kind: k,
		ptr: func(c *Config, _ *Stream) any { return ptr(&c.Plugin) },
	}
}

func iggy(name string, k kind, def, doc string, ptr func(i *Iggy) any) *option {
	return &option{
		Option: Option{Key: "iggy." + name, Env: "IGGY_" + strings.ToUpper(name), Default: def, Doc: doc},
		table:  "iggy", name: name, kind: k,
		ptr: func(c *Config, _ *Stream) any { return ptr(&c.Iggy) },
	}
}

func stream(name string, k kind, def, doc string, ptr func(s *Stream) any) *option {
	return &option{
		Option: Option{Key: "streams." + name, Env: "SINK_" + strings.ToUpper(name), Default: def, Doc: doc},
		table:  "streams", name: name, kind: k,
		ptr: func(_ *Config, s *Stream) any { return ptr(s) },
	}
}

func top(name string, k kind, def, doc string, ptr func(c *Config) any) *option {
	return &option{
		Option: Option{Key: name, Default: def, Doc: doc},
		name:   name, kind: k,
		ptr: func(c *Config, _ *Stream) any { return ptr(c) },
	}
}

func with(o *option, edit func(o *option)) *option { edit(o); return o }

func nonEmpty(o *option) { o.nonEmpty = true }

var options = buildOptions()

func buildOptions() []*option {
	pl := func(c *Config) *Plugin { return &c.Plugin }
	return []*option{
		with(top("type", kString, "sink", `connector kind; must be "sink"`, func(c *Config) any { return &c.Type }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error {
				if c.Type != "sink" {
					return errors.New(`this program is a sink: accepted value "sink"`)
				}
				return nil
			}
		}),
		with(top("key", kString, "s3", "connector id; names the default consumer group", func(c *Config) any { return &c.Key }), nonEmpty),
		with(top("enabled", kBool, "true", "false: every run logs one line and drains nothing", func(c *Config) any { return &c.Enabled }), func(o *option) { o.Env = "SINK_ENABLED" }),
		with(top("version", kInt, "0", "configuration version", func(c *Config) any { return &c.Version }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Version }, 0, math.MaxInt64, "0 or more")
		}),
		top("name", kString, "", "display name", func(c *Config) any { return &c.Name }),
		top("verbose", kBool, "false", "log per-batch details at info instead of debug", func(c *Config) any { return &c.Verbose }),

		with(stream("stream", kString, "", "stream name or numeric id (required; name:<text> for a name made of digits)", func(s *Stream) any { return &s.Stream }), nonEmpty),
		with(stream("topics", kStrings, "", "topic names or ids to drain (required; env: comma-separated; name:<text> for a name made of digits)", func(s *Stream) any { return &s.Topics }), func(o *option) {
			o.fix = func(_ *Config, s *Stream) error {
				if len(s.Topics) == 0 {
					return errors.New(`at least one topic is required, e.g. ["events"]`)
				}
				for _, t := range s.Topics {
					if strings.TrimSpace(t) == "" {
						return errors.New("topic names must not be empty")
					}
				}
				return nil
			}
		}),
		with(stream("schema", kString, "json", "payload schema: "+strings.Join(schemas, ", "), func(s *Stream) any { return (*string)(&s.Schema) }), func(o *option) {
			o.fix = enum(func(_ *Config, s *Stream) *string { return (*string)(&s.Schema) }, schemas...)
		}),
		with(stream("batch_length", kInt, "1000", "messages per poll", func(s *Stream) any { return &s.BatchLength }), func(o *option) {
			o.fix = intRange(func(_ *Config, s *Stream) int64 { return int64(s.BatchLength) }, 1, math.MaxUint32, "greater than 0")
		}),
		stream("poll_interval", kDuration, "5ms", "minimum time between polls", func(s *Stream) any { return &s.PollInterval }),
		with(stream("consumer_group", kString, "iggy-connect-sink-<key>", "Iggy consumer group (created if missing)", func(s *Stream) any { return &s.ConsumerGroup }), func(o *option) {
			o.nonEmpty = true
			o.computed = true
		}),

		with(plugin("bucket", kString, "", "S3 bucket (required)", func(p *Plugin) any { return &p.Bucket }), nonEmpty),
		with(plugin("region", kString, "", "AWS region (required; defaults to AWS_REGION, then AWS_DEFAULT_REGION; \"auto\" for R2)", func(p *Plugin) any { return &p.Region }), func(o *option) {
			o.nonEmpty = true
			o.computed = true
		}),
		with(plugin("prefix", kString, "", "key prefix; leading and trailing '/' trimmed; no empty, . or .. parts", func(p *Plugin) any { return &p.Prefix }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error { return keys.CheckPrefix(c.Plugin.Prefix) }
		}),
		with(plugin("endpoint", kString, "", "custom S3 endpoint URL with scheme (MinIO, R2, ...)", func(p *Plugin) any { return &p.Endpoint }), func(o *option) {
			o.url = true
			o.fix = func(c *Config, _ *Stream) error {
				if c.Plugin.Endpoint == "" {
					return nil
				}
				u, err := url.Parse(c.Plugin.Endpoint)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return errors.New(`must be an http:// or https:// URL, e.g. "http://127.0.0.1:9000"`)
				}
				return nil
			}
		}),
		plugin("access_key_id", kString, "", "S3 access key id; set with secret_access_key or not at all", func(p *Plugin) any { return &p.AccessKeyID }),
		plugin("secret_access_key", kSecret, "", "S3 secret access key; set with access_key_id or not at all", func(p *Plugin) any { return &p.SecretAccessKey }),
		with(plugin("path_template", kString, "{stream}/{topic}/{date}/{hour}", "object key directories; placeholders "+strings.Join(keys.Placeholders(), " ")+" "+keys.PayloadPlaceholder+" (a field of JSON payloads: one object per value of each object's range)", func(p *Plugin) any { return &p.PathTemplate }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error {
				t, err := keys.ParseTemplate(c.Plugin.PathTemplate)
				if err != nil {
					return err
				}
				c.Plugin.Template = t
				return nil
			}
		}),
		with(plugin("max_partition_values", kInt, "100", "with {payload.<path>} in path_template: the most distinct values one object's range (a unit) splits into, one object each; a message with a value past it ends the unit early (1..100000)", func(p *Plugin) any { return &p.MaxPartitionValues }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Plugin.MaxPartitionValues }, 1, 100000, "between 1 and 100000")
		}),
		with(plugin("default_partition_name", kString, keys.DefaultValueSegment, "with {payload.<path>} in path_template: the folder of records whose field is missing, null, an empty string, an object or an array (Hive's name for the NULL partition); [A-Za-z0-9._-], not starting with '.'", func(p *Plugin) any { return &p.DefaultPartitionName }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error {
				err := keys.CheckDefaultSegment(c.Plugin.DefaultPartitionName)
				if err != nil {
					return errors.New(strings.TrimPrefix(err.Error(), keys.ErrInvalidValueSegment.Error()+": "))
				}
				return nil
			}
		}),
		with(plugin("file_rotation", kString, "size", "rotation threshold kind: size or messages", func(p *Plugin) any { return (*string)(&p.FileRotation) }), func(o *option) {
			o.fix = enum(func(c *Config, _ *Stream) *string { return (*string)(&pl(c).FileRotation) }, fileRotations...)
		}),
		with(plugin("max_file_size", kByteSize, "8MiB", "size rotation threshold, uncompressed (at most 5TiB)", func(p *Plugin) any { return &p.MaxFileSize }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Plugin.MaxFileSize }, 1, maxObjectSize, "greater than 0 and at most 5TiB (S3's object size limit)")
		}),
		with(plugin("max_messages_per_file", kInt, "", "messages rotation threshold; required when file_rotation = \"messages\"", func(p *Plugin) any { return &p.MaxMessagesPerFile }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error {
				if c.Plugin.MaxMessagesPerFile == 0 {
					return errors.New("must be greater than 0")
				}
				return nil
			}
		}),
		with(plugin("output_format", kString, "json_lines", "json_lines (.jsonl), json_array (.json), raw (.bin) or parquet (.parquet; see parquet_*)", func(p *Plugin) any { return (*string)(&p.OutputFormat) }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error {
				switch strings.ToLower(string(c.Plugin.OutputFormat)) {
				case "json_lines", "jsonl", "jsonlines":
					c.Plugin.OutputFormat = batch.FormatJSONLines
				case "json_array":
					c.Plugin.OutputFormat = batch.FormatJSONArray
				case "raw":
					c.Plugin.OutputFormat = batch.FormatRaw
				case "parquet":
					c.Plugin.OutputFormat = batch.FormatParquet
				case "json":
					return errors.New(`"json" is ambiguous (refused upstream too): use json_lines or json_array`)
				default:
					return errors.New("accepted values: json_lines (or jsonl, jsonlines), json_array, raw, parquet")
				}
				return nil
			}
		}),
		plugin("include_metadata", kBool, "true", "add offset, timestamp, stream, topic, partition_id to each record", func(p *Plugin) any { return &p.IncludeMetadata }),
		plugin("include_headers", kBool, "false", "add message headers to each record", func(p *Plugin) any { return &p.IncludeHeaders }),
		with(plugin("max_attempts", kInt, "3", "upload attempts including the first (alias max_retries); 0 means 1", func(p *Plugin) any { return &p.MaxAttempts }), func(o *option) {
			o.alias = "max_retries"
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return int64(c.Plugin.MaxAttempts) }, 0, math.MaxUint32, "0 or more")
		}),
		plugin("retry_delay", kDuration, "1s", "base delay between upload attempts (exponential backoff)", func(p *Plugin) any { return &p.RetryDelay }),
		with(plugin("path_style", kOptBool, "", "path-style S3 addressing; unset = on when endpoint is set", func(p *Plugin) any { return &p.PathStyle }), func(o *option) {
			o.computed = true
		}),
		with(plugin("state_table", kString, "iggy-s3-sink-state", "DynamoDB table holding per-partition state", func(p *Plugin) any { return &p.StateTable }), nonEmpty),
		with(plugin("max_file_age", kDuration, "5m", "write a partial object once its first message is this old", func(p *Plugin) any { return &p.MaxFileAge }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &pl(c).MaxFileAge }, 1)
		}),
		with(plugin("compression", kString, "none", "object compression: none, gzip (.gz) or zstd (.zst); none with parquet (see parquet_compression)", func(p *Plugin) any { return (*string)(&p.Compression) }), func(o *option) {
			o.fix = enum(func(c *Config, _ *Stream) *string { return (*string)(&pl(c).Compression) }, compressions...)
		}),
		with(plugin("invalid_payload", kString, "base64", "payload not valid for schema json (or for parquet_schema): base64 (keep, encoded), fail (stop the partition) or error_object (write it to an error object under error_prefix and go on; the default with table_format = \"iceberg\", where a value the table's column type cannot hold is rejected too)", func(p *Plugin) any { return (*string)(&p.InvalidPayload) }), func(o *option) {
			o.fix = enum(func(c *Config, _ *Stream) *string { return (*string)(&pl(c).InvalidPayload) }, invalidPayloads...)
		}),
		with(plugin("server_side_encryption", kString, "", "S3 server-side encryption: AES256 or aws:kms (unset = bucket default)", func(p *Plugin) any { return &p.ServerSideEncryption }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error {
				if c.Plugin.ServerSideEncryption == "" {
					return nil
				}
				return enum(func(c *Config, _ *Stream) *string { return &pl(c).ServerSideEncryption }, serverSideEncrypts...)(c, nil)
			}
		}),
		plugin("sse_kms_key_id", kString, "", "KMS key for server_side_encryption = \"aws:kms\"", func(p *Plugin) any { return &p.SSEKMSKeyID }),
		with(plugin("checksum", kString, "crc32c", "how the store proves it took each body: crc32c (sent with every PUT and part, verified by the store; a store that ignores it is detected and proved by MD5 ETags) or md5 (no checksum header: ETags only, for stores that refuse x-amz-checksum-*)", func(p *Plugin) any { return &p.Checksum }), func(o *option) {
			o.fix = enum(func(c *Config, _ *Stream) *string { return &pl(c).Checksum }, checksums...)
		}),
		with(plugin("partition_concurrency", kInt, "4", "partitions drained at once (1..64)", func(p *Plugin) any { return &p.PartitionConcurrency }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return int64(c.Plugin.PartitionConcurrency) }, 1, 64, "between 1 and 64")
		}),
		with(plugin("lease_duration", kDuration, "60s", "how long a partition lease lasts without renewal (at least 1s); renewed every third of it. A crashed run (kill -9, out of memory, a Lambda hard timeout) blocks its partitions this long; a stopped one releases them at once", func(p *Plugin) any { return &p.LeaseDuration }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &pl(c).LeaseDuration }, MinLeaseDuration)
		}),
		plugin("deadline_margin", kDuration, "10s", "stop starting new objects when less time than this remains", func(p *Plugin) any { return &p.DeadlineMargin }),
		with(plugin("max_poll_bytes", kByteSize, "16MiB", "most bytes one poll takes in (64KiB..60MiB): the messages asked for adapt to the largest seen, down to one; a message larger than this is reported by a .toolarge marker with its offset instead of archived (on 0.8 the SDK reads it first)", func(p *Plugin) any { return &p.MaxPollBytes }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Plugin.MaxPollBytes }, 64<<10, 60<<20, "between 64KiB and 60MiB")
		}),
		with(plugin("multipart_threshold", kByteSize, "16MiB", "objects larger than this upload as multipart (at least 5MiB)", func(p *Plugin) any { return &p.MultipartThreshold }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Plugin.MultipartThreshold }, minPartSize, maxObjectSize, "between 5MiB and 5TiB")
		}),
		with(plugin("part_size", kByteSize, "8MiB", "multipart part size (5MiB..5GiB)", func(p *Plugin) any { return &p.PartSize }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Plugin.PartSize }, minPartSize, maxPartSize, "between 5MiB and 5GiB (S3's part size limits)")
		}),
		with(plugin("metrics_namespace", kString, "IggyS3Sink", "CloudWatch metrics namespace", func(p *Plugin) any { return &p.MetricsNamespace }), nonEmpty),
		with(plugin("run_timeout", kDuration, "45s", "longest run; the Lambda's own deadline applies when shorter (keep it under the schedule interval)", func(p *Plugin) any { return &p.RunTimeout }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &pl(c).RunTimeout }, time.Second)
		}),
		with(plugin("aws_request_timeout", kDuration, "10s", "longest wait for the response to one S3, DynamoDB or Secrets Manager request (then retried)", func(p *Plugin) any { return &p.AWSRequestTimeout }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &pl(c).AWSRequestTimeout }, 1)
		}),
		with(plugin("aws_call_timeout", kDuration, "30s", "longest DynamoDB or Secrets Manager call, retries included", func(p *Plugin) any { return &p.AWSCallTimeout }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &pl(c).AWSCallTimeout }, 1)
		}),
		with(plugin("max_json_depth", kInt, "128", "deepest nesting a payload may have to count as JSON (1..10000; upstream's serde_json: 128); deeper ones follow invalid_payload", func(p *Plugin) any { return &p.MaxJSONDepth }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return int64(c.Plugin.MaxJSONDepth) }, 1, MaxJSONDepthLimit, "between 1 and 10000")
		}),
		// Lambda fan-out (see internal/fanout); the poller never fans out.
		with(plugin("max_workers", kInt, "1", "Lambda: most invocations draining at once, the scheduled one included (1 = no fan-out; 1..1000)", func(p *Plugin) any { return &p.MaxWorkers }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return int64(c.Plugin.MaxWorkers) }, 1, 1000, "between 1 and 1000")
		}),
		with(plugin("worker_rate", kInt, "10000", "Lambda fan-out: messages per second one invocation drains, until a run has measured it", func(p *Plugin) any { return &p.WorkerRate }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return int64(c.Plugin.WorkerRate) }, 1, math.MaxInt32, "greater than 0")
		}),
		with(plugin("settle_timeout", kDuration, "5s", "Lambda fan-out: longest wait for the workers to join the consumer group", func(p *Plugin) any { return &p.SettleTimeout }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &pl(c).SettleTimeout }, 1)
		}),
		with(plugin("error_prefix", kString, "<prefix>/_errors", "where error objects go (invalid_payload = \"error_object\"): <error_prefix>/<path_template>/<partition>-<first>-<last>.errors.jsonl; the leading '_' keeps them out of Athena, Hive and Spark tables over the prefix", func(p *Plugin) any { return &p.ErrorPrefix }), func(o *option) {
			o.computed = true
			o.fix = func(c *Config, _ *Stream) error { return keys.CheckPrefix(c.Plugin.ErrorPrefix) }
		}),
		with(plugin("parquet_compression", kString, "zstd", "output_format = \"parquet\": page compression: "+strings.Join(parquetCodecs, ", "), func(p *Plugin) any { return (*string)(&p.ParquetCompression) }), func(o *option) {
			o.fix = enum(func(c *Config, _ *Stream) *string { return (*string)(&pl(c).ParquetCompression) }, parquetCodecs...)
		}),
		with(plugin("parquet_row_group_size", kByteSize, "128MiB", "output_format = \"parquet\": a row group ends once its input (payload and header bytes) reaches this (64KiB..5TiB); a streamed object holds about a fifth of it in memory", func(p *Plugin) any { return &p.ParquetRowGroupSize }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Plugin.ParquetRowGroupSize }, 64<<10, maxObjectSize, "between 64KiB and 5TiB")
		}),
		with(plugin("parquet_page_size", kByteSize, "1MiB", "output_format = \"parquet\": a data page's target size before compression (1KiB..1GiB)", func(p *Plugin) any { return &p.ParquetPageSize }), func(o *option) {
			o.fix = intRange(func(c *Config, _ *Stream) int64 { return c.Plugin.ParquetPageSize }, 1<<10, gib, "between 1KiB and 1GiB")
		}),
		with(plugin("parquet_schema", kString, "", "output_format = \"parquet\": pin the payload columns instead of inferring them per object: a JSON schema file's path, the JSON itself, or a TOML table ({fields = [{name, type, required}]}); records that do not fit follow invalid_payload (error_object or fail)", func(p *Plugin) any { return &p.ParquetSchema }), func(o *option) {
			o.tableOK = true
			o.fix = func(c *Config, _ *Stream) error {
				s, err := loadPinnedSchema(c.Plugin.ParquetSchema)
				c.Plugin.PinnedSchema = s
				return err
			}
		}),
		plugin("parquet_keep_extra", kBool, "false", "output_format = \"parquet\" with parquet_schema: keep the payload members the schema does not name as one JSON column, payload_extra (false drops them)", func(p *Plugin) any { return &p.ParquetKeepExtra }),
		with(plugin("table_format", kString, "none", "none, or iceberg: register every Parquet object in an Iceberg table too, exactly once (needs output_format = \"parquet\"; see iceberg_*)", func(p *Plugin) any { return (*string)(&p.TableFormat) }), func(o *option) {
			o.fix = enum(func(c *Config, _ *Stream) *string { return (*string)(&pl(c).TableFormat) }, tableFormats...)
		}),
		with(plugin("iceberg_catalog", kString, "", "table_format = \"iceberg\": the catalog: glue, s3tables or rest", func(p *Plugin) any { return (*string)(&p.IcebergCatalog) }), func(o *option) {
			o.fix = func(c *Config, _ *Stream) error {
				if c.Plugin.IcebergCatalog == "" {
					return nil
				}
				return enum(func(c *Config, _ *Stream) *string { return (*string)(&pl(c).IcebergCatalog) }, icebergCatalogs...)(c, nil)
			}
		}),
		with(plugin("iceberg_catalog_uri", kString, "", "table_format = \"iceberg\": the REST catalog's URL (rest; s3tables: default https://s3tables.<region>.amazonaws.com/iceberg)", func(p *Plugin) any { return &p.IcebergCatalogURI }), func(o *option) {
			o.url = true
		}),
		plugin("iceberg_warehouse", kString, "", "table_format = \"iceberg\": rest: the warehouse the catalog names; s3tables: the table bucket's ARN; glue: where table metadata goes (default s3://<bucket>/<prefix>/_iceberg)", func(p *Plugin) any { return &p.IcebergWarehouse }),
		plugin("iceberg_namespace", kString, "iggy", "table_format = \"iceberg\": the namespace (Glue database) of the tables; created when missing", func(p *Plugin) any { return &p.IcebergNamespace }),
		plugin("iceberg_table", kString, "{stream}_{topic}", "table_format = \"iceberg\": each topic's table name; placeholders {stream} {topic}", func(p *Plugin) any { return &p.IcebergTable }),

		with(iggy("address", kString, "127.0.0.1:8090", "Iggy server TCP address host:port", func(i *Iggy) any { return &i.Address }), func(o *option) {
			o.nonEmpty = true
			o.fix = func(c *Config, _ *Stream) error {
				_, port, err := net.SplitHostPort(c.Iggy.Address)
				if p, perr := strconv.ParseUint(port, 10, 16); err != nil || perr != nil || p == 0 {
					return errors.New(`must be host:port, e.g. "127.0.0.1:8090"`)
				}
				return nil
			}
		}),
		with(iggy("protocol", kString, "auto", "Iggy release whose wire protocol to speak: auto (find out at connect, at most one extra round trip), 0.8 (legacy framing), 0.9 (binary protocol 0.11.0) or 0.10 (0.12.0)", func(i *Iggy) any { return (*string)(&i.Protocol) }), func(o *option) {
			o.fix = enum(func(c *Config, _ *Stream) *string { return (*string)(&c.Iggy.Protocol) }, iggyProtocols...)
		}),
		iggy("username", kString, "iggy", "Iggy user", func(i *Iggy) any { return &i.Username }),
		iggy("password", kSecret, "iggy", "Iggy password", func(i *Iggy) any { return &i.Password }),
		iggy("token", kSecret, "", "Iggy personal access token (instead of username/password)", func(i *Iggy) any { return &i.Token }),
		iggy("tls_enabled", kBool, "false", "connect with TLS", func(i *Iggy) any { return &i.TLSEnabled }),
		iggy("tls_ca_file", kString, "", "PEM file of CAs to trust (needs tls_enabled)", func(i *Iggy) any { return &i.TLSCAFile }),
		iggy("tls_domain", kString, "", "server name to verify (needs tls_enabled)", func(i *Iggy) any { return &i.TLSDomain }),
		iggy("credentials_secret", kString, "", "Secrets Manager secret name or ARN holding the Iggy credentials", func(i *Iggy) any { return &i.CredentialsSecret }),
		with(iggy("connect_timeout", kDuration, "5s", "timeout for connecting to Iggy", func(i *Iggy) any { return &i.ConnectTimeout }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &c.Iggy.ConnectTimeout }, 1)
		}),
		with(iggy("keepalive", kDuration, "10s", "Iggy 0.9/0.10: ping after this much silence on the connection; keep it under the server's heartbeat eviction (36s for 0.9's defaults)", func(i *Iggy) any { return &i.Keepalive }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &c.Iggy.Keepalive }, 1)
		}),
		with(iggy("request_timeout", kDuration, "30s", "longest wait for one Iggy reply; the connection is then cut and the run ends with an error naming the command", func(i *Iggy) any { return &i.RequestTimeout }), func(o *option) {
			o.fix = durAtLeast(func(c *Config, _ *Stream) *time.Duration { return &c.Iggy.RequestTimeout }, 1)
		}),
	}
}

// Options returns every option: TOML key, environment variable, default and meaning.
func Options() []Option {
	out := make([]Option, len(options))
	for i, o := range options {
		out[i] = o.Option
	}
	return out
}

// setTOML stores v, a decoded TOML value, into the option's field.
func (o *option) setTOML(c *Config, s *Stream, v any) error {
	p := o.ptr(c, s)
	switch o.kind {
	case kString, kSecret:
		if m, ok := v.(map[string]any); ok && o.tableOK {
			b, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("the table cannot be read as JSON: %w", err)
			}
			return o.setString(p, string(b))
		}
		x, ok := v.(string)
		if !ok {
			if o.tableOK {
				return fmt.Errorf("expected a string (a file path or JSON) or a table, got %s", tomlType(v))
			}
			return fmt.Errorf("%w, got %s", errExpectedString, tomlType(v))
		}
		return o.setString(p, x)
	case kBool, kOptBool:
		x, ok := v.(bool)
		if !ok {
			return fmt.Errorf("expected true or false, got %s", tomlType(v))
		}
		setBool(p, x)
		return nil
	case kInt:
		x, ok := v.(int64)
		if !ok {
			return fmt.Errorf("expected an integer, got %s", tomlType(v))
		}
		return setInt(p, x)
	case kDuration:
		switch x := v.(type) {
		case string:
			d, err := ParseDuration(x)
			if err != nil {
				return err
			}
			*p.(*time.Duration) = d
			return nil
		case int64, float64:
			return fmt.Errorf(`a bare number has no unit; write a string such as "%vs" or "%vms"`, x, x)
		default:
			return fmt.Errorf(`expected a duration string such as "1s", got %s`, tomlType(v))
		}
	case kByteSize:
		switch x := v.(type) {
		case string:
			n, err := ParseByteSize(x)
			if err != nil {
				return err
			}
			*p.(*int64) = n
			return nil
		case int64:
			if x < 0 {
				return errors.New("must not be negative")
			}
			*p.(*int64) = x
			return nil
		default:
			return fmt.Errorf(`expected a byte size such as "8MiB" or a number of bytes, got %s`, tomlType(v))
		}
	case kStrings:
		arr, ok := v.([]any)
		if !ok {
			return fmt.Errorf(`expected an array of strings such as ["a", "b"], got %s`, tomlType(v))
		}
		out := make([]string, 0, len(arr))
		for _, e := range arr {
			x, ok := e.(string)
			if !ok {
				return fmt.Errorf(`expected an array of strings such as ["a", "b"], got an element of type %s`, tomlType(e))
			}
			out = append(out, x)
		}
		*p.(*[]string) = out
		return nil
	}
	return fmt.Errorf("internal: option %s has no kind", o.Key)
}

// setEnv stores v, an environment variable's value, into the option's field.
func (o *option) setEnv(c *Config, s *Stream, v string) error {
	p := o.ptr(c, s)
	switch o.kind {
	case kString, kSecret:
		return o.setString(p, v)
	case kBool, kOptBool:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return errors.New("expected true or false")
		}
		setBool(p, b)
		return nil
	case kInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return errors.New("expected an integer")
		}
		return setInt(p, n)
	case kDuration:
		d, err := ParseDuration(v)
		if err != nil {
			return err
		}
		*p.(*time.Duration) = d
		return nil
	case kByteSize:
		n, err := ParseByteSize(v)
		if err != nil {
			return err
		}
		*p.(*int64) = n
		return nil
	case kStrings:
		var out []string
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		*p.(*[]string) = out
		return nil
	}
	return fmt.Errorf("internal: option %s has no kind", o.Key)
}

func (o *option) setString(p any, x string) error {
	if o.nonEmpty && strings.TrimSpace(x) == "" {
		return errors.New("must not be empty")
	}
	switch p := p.(type) {
	case *string:
		*p = x
	case *Secret:
		*p = Secret(x)
	}
	return nil
}

func setBool(p any, b bool) {
	switch p := p.(type) {
	case *bool:
		*p = b
	case **bool:
		*p = &b
	}
}

func setInt(p any, n int64) error {
	switch p := p.(type) {
	case *int64:
		*p = n
	case *int:
		if n < math.MinInt || n > math.MaxInt {
			return errors.New("out of range")
		}
		*p = int(n)
	case *uint32:
		if n < 0 || n > math.MaxUint32 {
			return fmt.Errorf("must be between 0 and %d", uint32(math.MaxUint32))
		}
		*p = uint32(n)
	case *uint64:
		if n < 0 {
			return errors.New("must not be negative")
		}
		*p = uint64(n)
	}
	return nil
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	default:
		return "a date/time"
	}
}

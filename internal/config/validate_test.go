package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

const streamsOnly = `
[[streams]]
stream = "s"
topics = ["t"]
`

// TestInvalidConfig checks one rule per row: the load fails and the single
// message names the key (and env var), the bad value and what is accepted.
func TestInvalidConfig(t *testing.T) {
	withRegion := map[string]string{"AWS_REGION": "us-east-1"}
	tests := []struct {
		name string
		doc  string // full TOML; "+" prefix = appended to minimal (inside [plugin_config])
		env  map[string]string
		want []string
	}{
		{"bucket required", streamsOnly + "[plugin_config]\nregion = \"us-east-1\"\n", nil, []string{"plugin_config.bucket", "SINK_BUCKET", "required"}},
		{"bucket empty", streamsOnly + "[plugin_config]\nbucket = \"\"\n", nil, []string{"plugin_config.bucket", `= ""`, "must not be empty"}},
		{"region required", streamsOnly + "[plugin_config]\nbucket = \"b\"\n", nil, []string{"plugin_config.region", "SINK_REGION", "AWS_REGION"}},
		{"streams required", "[plugin_config]\nbucket = \"b\"\n", withRegion, []string{"streams", "SINK_STREAM", "SINK_TOPICS"}},
		{"stream name required", "[[streams]]\ntopics = [\"t\"]\n[plugin_config]\nbucket = \"b\"\n", withRegion, []string{"streams[0].stream", "SINK_STREAM", "required"}},
		{"topics required", "[[streams]]\nstream = \"s\"\n[plugin_config]\nbucket = \"b\"\n", withRegion, []string{"streams[0].topics", "SINK_TOPICS", "required"}},
		{"topics empty array", "[[streams]]\nstream = \"s\"\ntopics = []\n", nil, []string{"streams[0].topics", "= []", "at least one topic"}},
		{"topics not an array", "[[streams]]\nstream = \"s\"\ntopics = \"t\"\n", nil, []string{"streams[0].topics", `= "t"`, "array of strings"}},
		{"second stream's bad schema", streamsOnly + "[[streams]]\nstream = \"s2\"\ntopics = [\"t\"]\nschema = \"XML\"\n", nil, []string{"config: test.toml: streams[1].schema = \"XML\": accepted values"}},
		{"second stream's topics", streamsOnly + "[[streams]]\nstream = \"s2\"\n[plugin_config]\nbucket = \"b\"\n", withRegion, []string{"streams[1].topics", "required"}},
		{"duplicate topic", streamsOnly + "[[streams]]\nstream = \"s\"\ntopics = [\"u\", \"t\"]\n[plugin_config]\nbucket = \"b\"\n", withRegion, []string{"streams[1].topics", `"t"`, "already drained by streams[0]"}},
		{"template without {topic} for two topics", "[[streams]]\nstream = \"s\"\ntopics = [\"a\", \"b\"]\n[plugin_config]\nbucket = \"b\"\npath_template = \"{stream}/{date}\"\n", withRegion, []string{"plugin_config.path_template", `"{stream}/{date}"`, "{topic}", "overwrite"}},
		{"template without {stream} for two streams", "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\n[[streams]]\nstream = \"s2\"\ntopics = [\"t\"]\n[plugin_config]\nbucket = \"b\"\npath_template = \"{topic}\"\n", withRegion, []string{"plugin_config.path_template", "{stream}", "overwrite"}},
		{"streams not array of tables", "streams = \"x\"\n", nil, []string{"streams", "[[streams]]"}},
		{"only access_key_id", "+access_key_id = \"AKIA\"", nil, []string{"plugin_config.secret_access_key", "SINK_SECRET_ACCESS_KEY", "both"}},
		{"only secret_access_key", "+secret_access_key = \"s3cr3t-value\"", nil, []string{"plugin_config.access_key_id", "SINK_ACCESS_KEY_ID", "both"}},
		{"max_file_size zero", "+max_file_size = \"0B\"", nil, []string{"plugin_config.max_file_size", `"0B"`, "greater than 0"}},
		{"max_file_size over S3 limit", "+max_file_size = \"6TiB\"", nil, []string{"plugin_config.max_file_size", `"6TiB"`, "5TiB"}},
		{"max_file_size bits", "+max_file_size = \"8Mb\"", nil, []string{"plugin_config.max_file_size", `"8Mb"`, "bits", `"8MB"`}},
		{"max_file_size mebibits", "+max_file_size = \"8mib\"", nil, []string{"plugin_config.max_file_size", `"8mib"`, "bits", `"8MiB"`}},
		{"max_file_size garbage", "+max_file_size = \"not_a_size\"", nil, []string{"plugin_config.max_file_size", `"not_a_size"`, "KiB"}},
		{"max_file_size negative integer", "+max_file_size = -5", nil, []string{"plugin_config.max_file_size", "-5", "negative"}},
		{"messages mode needs max_messages_per_file", "+file_rotation = \"messages\"", nil, []string{"plugin_config.max_messages_per_file", "SINK_MAX_MESSAGES_PER_FILE", `file_rotation = "messages"`}},
		{"max_messages_per_file zero", "+max_messages_per_file = 0", nil, []string{"plugin_config.max_messages_per_file", "= 0", "greater than 0"}},
		{"max_messages_per_file negative", "+max_messages_per_file = -1", nil, []string{"plugin_config.max_messages_per_file", "= -1", "negative"}},
		{"max_messages_per_file string", "+max_messages_per_file = \"10\"", nil, []string{"plugin_config.max_messages_per_file", `"10"`, "integer"}},
		{"retry_delay bare number string", "+retry_delay = \"5\"", nil, []string{"plugin_config.retry_delay", `"5"`, "no unit", `"1s"`}},
		{"retry_delay bare integer", "+retry_delay = 5", nil, []string{"plugin_config.retry_delay", "= 5", "bare number", `"5s"`}},
		{"poll_interval bad", "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\npoll_interval = \"fast\"\n", nil, []string{"streams[0].poll_interval", `"fast"`, `"100ms"`}},
		{"max_file_age zero", "+max_file_age = \"0s\"", nil, []string{"plugin_config.max_file_age", `"0s"`, "greater than 0"}},
		{"unknown placeholder", "+path_template = \"{stream}/{minutes}\"", nil, []string{"plugin_config.path_template", `"{stream}/{minutes}"`, "{minutes}", "{minute}"}},
		{"empty path_template", "+path_template = \"\"", nil, []string{"plugin_config.path_template", `= ""`, "empty"}},
		{"payload field without a path", "+path_template = \"{stream}/{payload.}\"", nil, []string{"plugin_config.path_template", `"{stream}/{payload.}"`, "dotted path", "{payload.country}"}},
		{"payload field beside a name", "+path_template = \"{stream}-{payload.country}\"", nil, []string{"plugin_config.path_template", "together", "separate them with '/'"}},
		{"payload field of a text stream", "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\nschema = \"text\"\n[plugin_config]\nbucket = \"b\"\npath_template = \"{stream}/{topic}/{payload.country}\"\n", withRegion, []string{"streams[0].schema", `"text"`, `must be "json"`, "{payload.<path>}"}},
		{"max_partition_values zero", "+path_template = \"{stream}/{topic}/{payload.country}\"\nmax_partition_values = 0", nil, []string{"plugin_config.max_partition_values", "= 0", "between 1 and 100000"}},
		{"max_partition_values without a payload field", "+max_partition_values = 10", nil, []string{"plugin_config.max_partition_values", "only used with", "{payload.<path>}"}},
		{"default_partition_name hidden", "+path_template = \"{stream}/{topic}/{payload.country}\"\ndefault_partition_name = \".none\"", nil, []string{"plugin_config.default_partition_name", `".none"`, "starts with '.'"}},
		{"default_partition_name with a slash", "+path_template = \"{stream}/{topic}/{payload.country}\"\ndefault_partition_name = \"a/b\"", nil, []string{"plugin_config.default_partition_name", `"a/b"`, "[A-Za-z0-9._-]"}},
		{"default_partition_name without a payload field", "+default_partition_name = \"none\"", nil, []string{"plugin_config.default_partition_name", "only used with"}},
		{"lone brace", "+path_template = \"{stream\"", nil, []string{"plugin_config.path_template", `"{stream"`, "not closed"}},
		{"output_format json", "+output_format = \"json\"", nil, []string{"plugin_config.output_format", `"json"`, "json_lines or json_array"}},
		{"output_format unknown", "+output_format = \"csv\"", nil, []string{"plugin_config.output_format", `"csv"`, "json_lines", "json_array", "raw"}},
		{"file_rotation unknown", "+file_rotation = \"time\"", nil, []string{"plugin_config.file_rotation", `"time"`, "size, messages"}},
		{"compression unknown", "+compression = \"lz4\"", nil, []string{"plugin_config.compression", `"lz4"`, "none, gzip, zstd"}},
		{"invalid_payload unknown", "+invalid_payload = \"drop\"", nil, []string{"plugin_config.invalid_payload", `"drop"`, "base64, fail"}},
		{"schema unknown", "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\nschema = \"xml\"\n", nil, []string{"streams[0].schema", `"xml"`, "json, raw, text, proto, flatbuffer, avro"}},
		{"sse unknown", "+server_side_encryption = \"KMS\"", nil, []string{"plugin_config.server_side_encryption", `"KMS"`, "AES256, aws:kms"}},
		{"kms key without aws:kms", "+server_side_encryption = \"AES256\"\nsse_kms_key_id = \"alias/x\"", nil, []string{"plugin_config.sse_kms_key_id", `"alias/x"`, `"aws:kms"`}},
		{"partition_concurrency zero", "+partition_concurrency = 0", nil, []string{"plugin_config.partition_concurrency", "= 0", "between 1 and 64"}},
		{"partition_concurrency too high", "+partition_concurrency = 65", nil, []string{"plugin_config.partition_concurrency", "= 65", "between 1 and 64"}},
		{"part_size too small", "+part_size = \"1MiB\"", nil, []string{"plugin_config.part_size", `"1MiB"`, "5MiB and 5GiB"}},
		{"multipart_threshold too small", "+multipart_threshold = \"4MiB\"", nil, []string{"plugin_config.multipart_threshold", `"4MiB"`, "5MiB"}},
		{"batch_length zero", "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\nbatch_length = 0\n", nil, []string{"streams[0].batch_length", "= 0", "greater than 0"}},
		{"batch_length over u32", "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\nbatch_length = 4294967296\n", nil, []string{"streams[0].batch_length", "4294967296", "4294967295"}},
		{"bool as string", "+include_headers = \"yes\"", nil, []string{"plugin_config.include_headers", `"yes"`, "true or false"}},
		{"endpoint without scheme", "+endpoint = \"localhost:9000\"", nil, []string{"plugin_config.endpoint", `"localhost:9000"`, "http://"}},
		{"max_attempts negative", "+max_attempts = -1", nil, []string{"plugin_config.max_attempts", "= -1", "0 or more"}},
		{"max_attempts and max_retries", "+max_attempts = 2\nmax_retries = 3", nil, []string{"plugin_config.max_retries", "alias of max_attempts"}},
		{"iggy address", minimal + "[iggy]\naddress = \"nohost\"\n", nil, []string{"iggy.address", "IGGY_ADDRESS", `"nohost"`, "host:port"}},
		{"iggy connect_timeout", minimal + "[iggy]\nconnect_timeout = \"0s\"\n", nil, []string{"iggy.connect_timeout", `"0s"`, "greater than 0"}},
		{"tls_ca_file without tls", minimal + "[iggy]\ntls_ca_file = \"/ca.pem\"\n", nil, []string{"iggy.tls_ca_file", `"/ca.pem"`, "tls_enabled"}},
		{"type source", "type = \"source\"\n" + minimal, nil, []string{"type", `"source"`, `"sink"`}},
		{"version negative", "version = -1\n" + minimal, nil, []string{"version", "-1", "0 or more"}},
		{"plugin_config not a table", "plugin_config = 5\n", nil, []string{"plugin_config", "expected a table"}},
		{"unknown plugin key", "+max_file_sise = \"8MiB\"", nil, []string{"plugin_config.max_file_sise", `did you mean "max_file_size"`}},
		{"unknown iggy key", minimal + "[iggy]\nadress = \"a:1\"\n", nil, []string{"iggy.adress", `did you mean "address"`}},
		{"unknown streams key", "[[streams]]\nstream = \"s\"\ntopic = [\"t\"]\n", nil, []string{"streams[0].topic", `did you mean "topics"`}},
		{"unknown top-level key", "plugin_conf = 1\n" + minimal, nil, []string{"plugin_conf", `did you mean "plugin_config"`}},
		{"transform not a table", "transforms = { x = 1 }\n" + minimal, nil, []string{"transforms.x", "expected a table"}},
		{"TOML syntax", "[plugin_config\n", nil, []string{"test.toml", "line 2", "table name"}},
		// The environment: the message names the variable, the TOML key and the value.
		{"env byte size bits", minimal, map[string]string{"SINK_MAX_FILE_SIZE": "8Mb"}, []string{"SINK_MAX_FILE_SIZE", "plugin_config.max_file_size", `"8Mb"`, `"8MB"`}},
		{"env integer", minimal, map[string]string{"SINK_BATCH_LENGTH": "many"}, []string{"SINK_BATCH_LENGTH", "streams[0].batch_length", `"many"`, "integer"}},
		{"env bool", minimal, map[string]string{"IGGY_TLS_ENABLED": "maybe"}, []string{"IGGY_TLS_ENABLED", "iggy.tls_enabled", `"maybe"`, "true or false"}},
		{"env duration", minimal, map[string]string{"SINK_POLL_INTERVAL": "10"}, []string{"SINK_POLL_INTERVAL", `"10"`, "no unit"}},
		{"env template", minimal, map[string]string{"SINK_PATH_TEMPLATE": "{dt}"}, []string{"SINK_PATH_TEMPLATE", "plugin_config.path_template", `"{dt}"`, "{date}"}},
		{"env only secret", minimal, map[string]string{"SINK_SECRET_ACCESS_KEY": "zzz-secret"}, []string{"plugin_config.access_key_id", "both"}},
		{"env alias twice", minimal, map[string]string{"SINK_MAX_ATTEMPTS": "1", "SINK_MAX_RETRIES": "2"}, []string{"SINK_MAX_RETRIES", "SINK_MAX_ATTEMPTS", "only one"}},
		{"env messages mode", minimal, map[string]string{"SINK_FILE_ROTATION": "messages"}, []string{"plugin_config.max_messages_per_file", "SINK_MAX_MESSAGES_PER_FILE", "required"}},
		{"iceberg needs parquet", "+table_format = \"iceberg\"\niceberg_catalog = \"glue\"", nil, []string{"plugin_config.table_format", "SINK_TABLE_FORMAT", `output_format = "parquet"`, `"json_lines"`}},
		{"iceberg needs a catalog", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"", nil, []string{"plugin_config.iceberg_catalog", "SINK_ICEBERG_CATALOG", "glue, s3tables or rest"}},
		{"iceberg unknown catalog", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"hive\"", nil, []string{"plugin_config.iceberg_catalog", `"hive"`, "glue"}},
		{"iceberg unknown table format", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"delta\"", nil, []string{"plugin_config.table_format", `"delta"`, "iceberg"}},
		{"rest needs a uri", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"rest\"", nil, []string{"plugin_config.iceberg_catalog_uri", "SINK_ICEBERG_CATALOG_URI", "must be set"}},
		{"rest uri not a url", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"rest\"\niceberg_catalog_uri = \"localhost:8181\"", nil, []string{"plugin_config.iceberg_catalog_uri", `"localhost:8181"`, "http://"}},
		{"s3tables needs an arn", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"s3tables\"\niceberg_warehouse = \"my-tables\"", nil, []string{"plugin_config.iceberg_warehouse", `"my-tables"`, "ARN"}},
		{"glue warehouse not s3", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"glue\"\niceberg_warehouse = \"/tmp/w\"", nil, []string{"plugin_config.iceberg_warehouse", `"/tmp/w"`, "s3://"}},
		{"glue takes no uri", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"glue\"\niceberg_catalog_uri = \"http://127.0.0.1:1\"", nil, []string{"plugin_config.iceberg_catalog_uri", "AWS_ENDPOINT_URL_GLUE"}},
		{"namespace upper case", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"glue\"\niceberg_namespace = \"Iggy\"", nil, []string{"plugin_config.iceberg_namespace", `"Iggy"`, "a-z"}},
		{"table template bad text", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"glue\"\niceberg_table = \"{stream}.{topic}\"", nil, []string{"plugin_config.iceberg_table", `"{stream}.{topic}"`, "{stream}, {topic}"}},
		{"iceberg takes no base64", "+output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"iceberg\"\niceberg_catalog = \"glue\"\ninvalid_payload = \"base64\"", nil, []string{"plugin_config.invalid_payload", `"base64"`, `"error_object" (the default with tables)`}},
		{"iceberg key without iceberg", "+iceberg_namespace = \"x\"", nil, []string{"plugin_config.iceberg_namespace", `table_format = "iceberg"`, `"none"`}},
		{"env topics empty list", "[plugin_config]\nbucket = \"b\"\nregion = \"us-east-1\"\n", map[string]string{"SINK_STREAM": "s", "SINK_TOPICS": " , "}, []string{"SINK_TOPICS", "streams[0].topics", "at least one topic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.doc
			if strings.HasPrefix(doc, "+") {
				doc = minimal + doc[1:] + "\n"
			}
			c, err := loadString(t, doc, tt.env)
			if err == nil {
				t.Fatalf("loaded without error: %s", c)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if !strings.HasPrefix(msg, "config: ") || strings.Contains(msg, "\n") {
				t.Errorf("want one single-line message, got %q", msg)
			}
		})
	}
}

func TestErrorTypes(t *testing.T) {
	_, err := loadString(t, minimal+"max_file_size = \"8Mb\"\n", nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "plugin_config.max_file_size" || ce.Env != "SINK_MAX_FILE_SIZE" || ce.Value != `"8Mb"` || ce.File != "test.toml" {
		t.Fatalf("error = %#v", err)
	}
	if !errors.Is(err, ErrBitUnit) {
		t.Errorf("error %v does not wrap ErrBitUnit", err)
	}
	_, err = loadString(t, minimal+"path_template = \"{x}\"\n", nil)
	if !errors.Is(err, keys.ErrInvalidTemplate) {
		t.Errorf("error %v does not wrap keys.ErrInvalidTemplate", err)
	}
}

// TestIcebergConfig loads a valid Iceberg setup: defaults filled, names kept.
func TestIcebergConfig(t *testing.T) {
	c, err := loadString(t, minimal+"output_format = \"parquet\"\ncompression = \"none\"\ntable_format = \"ICEBERG\"\niceberg_catalog = \"rest\"\niceberg_catalog_uri = \"http://127.0.0.1:8181\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Plugin
	if p.TableFormat != "iceberg" || p.IcebergCatalog != "rest" || p.IcebergNamespace != "iggy" || p.IcebergTable != "{stream}_{topic}" {
		t.Fatalf("got table_format %q catalog %q namespace %q table %q", p.TableFormat, p.IcebergCatalog, p.IcebergNamespace, p.IcebergTable)
	}
	if p.InvalidPayload != "error_object" {
		t.Fatalf("invalid_payload %q under tables, want the error_object default", p.InvalidPayload)
	}
	c, err = loadString(t, minimal+"output_format = \"parquet\"\ncompression = \"none\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugin.InvalidPayload != "base64" {
		t.Fatalf("without tables: invalid_payload %q, want base64", c.Plugin.InvalidPayload)
	}
	c, err = loadString(t, minimal, map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_COMPRESSION": "none", "SINK_TABLE_FORMAT": "iceberg", "SINK_ICEBERG_CATALOG": "glue"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugin.IcebergCatalog != "glue" || c.Plugin.TableFormat != "iceberg" {
		t.Fatalf("from the environment: table_format %q catalog %q", c.Plugin.TableFormat, c.Plugin.IcebergCatalog)
	}
}

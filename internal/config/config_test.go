package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/editdist"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

const minimal = `
[[streams]]
stream = "s"
topics = ["t"]

[plugin_config]
bucket = "b"
region = "us-east-1"
`

func loadString(t *testing.T, doc string, env map[string]string) (*Config, error) {
	t.Helper()
	return load([]byte(doc), true, "test.toml", envOf(env))
}

func TestLoadUpstreamSeed(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "upstream_seed.toml"), envOf(nil))
	if err != nil {
		t.Fatalf("seed config from the upstream docs does not load: %v", err)
	}
	wantStreams := []Stream{{
		Stream: "application_logs", Topics: []string{"api_requests", "errors"}, Schema: "json",
		BatchLength: 1000, PollInterval: 100 * time.Millisecond, ConsumerGroup: "s3_sink",
	}}
	if !reflect.DeepEqual(c.Streams, wantStreams) {
		t.Errorf("Streams = %+v, want %+v", c.Streams, wantStreams)
	}
	if c.Type != "sink" || c.Key != "s3" || !c.Enabled || c.Version != 0 || c.Name != "S3 sink" || c.Verbose {
		t.Errorf("top level = %q %q %v %d %q %v", c.Type, c.Key, c.Enabled, c.Version, c.Name, c.Verbose)
	}
	if want := []string{"path", "plugin_config_format"}; !reflect.DeepEqual(c.Ignored, want) {
		t.Errorf("Ignored = %q, want %q", c.Ignored, want)
	}
	p := c.Plugin
	checks := []struct {
		name      string
		got, want any
	}{
		{"bucket", p.Bucket, "my-data-lake"},
		{"prefix", p.Prefix, "iggy/raw"},
		{"region", p.Region, "us-east-1"},
		{"path_template", p.PathTemplate, "{stream}/{topic}/{date}/{hour}"},
		{"file_rotation", p.FileRotation, RotateBySize},
		{"max_file_size", p.MaxFileSize, int64(8 * 1024 * 1024)},
		{"output_format", p.OutputFormat, batch.FormatJSONLines},
		// Documented defaults for everything the seed leaves out.
		{"endpoint", p.Endpoint, ""},
		{"access_key_id", p.AccessKeyID, ""},
		{"secret_access_key", p.SecretAccessKey, Secret("")},
		{"max_messages_per_file", p.MaxMessagesPerFile, uint64(0)},
		{"include_metadata", p.IncludeMetadata, true},
		{"include_headers", p.IncludeHeaders, false},
		{"max_attempts", p.MaxAttempts, 3},
		{"retry_delay", p.RetryDelay, time.Second},
		{"path_style", p.PathStyle, (*bool)(nil)},
		{"state_table", p.StateTable, "iggy-s3-sink-state"},
		{"max_file_age", p.MaxFileAge, 5 * time.Minute},
		{"compression", p.Compression, batch.CompressionNone},
		{"invalid_payload", p.InvalidPayload, InvalidBase64},
		{"server_side_encryption", p.ServerSideEncryption, ""},
		{"sse_kms_key_id", p.SSEKMSKeyID, ""},
		{"partition_concurrency", p.PartitionConcurrency, 4},
		{"lease_duration", p.LeaseDuration, 60 * time.Second},
		{"deadline_margin", p.DeadlineMargin, 10 * time.Second},
		{"multipart_threshold", p.MultipartThreshold, int64(16 * 1024 * 1024)},
		{"part_size", p.PartSize, int64(8 * 1024 * 1024)},
		{"metrics_namespace", p.MetricsNamespace, "IggyS3Sink"},
		{"iggy.address", c.Iggy.Address, "127.0.0.1:8090"},
		{"iggy.username", c.Iggy.Username, "iggy"},
		{"iggy.password", c.Iggy.Password.Reveal(), "iggy"},
		{"iggy.token", c.Iggy.Token, Secret("")},
		{"iggy.tls_enabled", c.Iggy.TLSEnabled, false},
		{"iggy.connect_timeout", c.Iggy.ConnectTimeout, 5 * time.Second},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	if p.Template == nil || p.Template.String() != p.PathTemplate {
		t.Fatalf("Template not parsed from path_template: %v", p.Template)
	}
	// The parsed template renders the seed document's example key.
	ts := uint64(time.Date(2026, 3, 16, 14, 0, 0, 0, time.UTC).UnixMicro())
	key := keys.NewNamer("", p.Template, "jsonl").Partition("application_logs", "api_requests", 0).Object(0, 999, ts)
	if want := "application_logs/api_requests/2026-03-16/14/00000-00000000000000000000-00000000000000000999.jsonl"; key != want {
		t.Errorf("key = %s, want %s", key, want)
	}
}

func TestLoadUpstreamMinioExampleWithEnvStreams(t *testing.T) {
	c, err := Load(filepath.Join("testdata", "upstream_minio.toml"), envOf(map[string]string{
		"SINK_STREAM": "logs", "SINK_TOPICS": " a, b ,,c ",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugin.Endpoint != "http://localhost:9000" || c.Plugin.AccessKeyID != "minioadmin" || c.Plugin.SecretAccessKey.Reveal() != "minioadmin" {
		t.Errorf("plugin = %+v", c.Plugin)
	}
	want := Stream{Stream: "logs", Topics: []string{"a", "b", "c"}, Schema: "json", BatchLength: 1000,
		PollInterval: 5 * time.Millisecond, ConsumerGroup: "iggy-connect-sink-s3"}
	if len(c.Streams) != 1 || !reflect.DeepEqual(c.Streams[0], want) {
		t.Errorf("Streams = %+v, want [%+v]", c.Streams, want)
	}
}

func TestEnvOverridesFile(t *testing.T) {
	file := minimal + `
prefix = "from-file"
max_file_size = "1MiB"
include_headers = false
compression = "gzip"

[iggy]
address = "file:1"
password = "file-pass"
`
	env := map[string]string{
		"SINK_BUCKET":                 "env-bucket",
		"SINK_PREFIX":                 "",
		"SINK_MAX_FILE_SIZE":          "2MB",
		"SINK_INCLUDE_HEADERS":        "true",
		"SINK_COMPRESSION":            "", // empty = unset: the file's value stays
		"SINK_PATH_STYLE":             "false",
		"SINK_STATE_TABLE":            "env-table",
		"SINK_MAX_FILE_AGE":           "90s",
		"SINK_MAX_RETRIES":            "7",
		"SINK_STREAM":                 "env-stream",
		"SINK_TOPICS":                 "x,y",
		"SINK_SCHEMA":                 "RAW",
		"SINK_BATCH_LENGTH":           "10",
		"SINK_CONSUMER_GROUP":         "g",
		"SINK_POLL_INTERVAL":          "1m 30s",
		"IGGY_ADDRESS":                "env:2",
		"IGGY_PASSWORD":               "env-pass",
		"IGGY_TLS_ENABLED":            "1",
		"IGGY_TLS_DOMAIN":             "iggy.local",
		"IGGY_CONNECT_TIMEOUT":        "250ms",
		"SINK_SERVER_SIDE_ENCRYPTION": "aws:kms",
		"SINK_SSE_KMS_KEY_ID":         "alias/k",
	}
	c, err := loadString(t, file, env)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"bucket", c.Plugin.Bucket, "env-bucket"},
		{"prefix kept: an empty SINK_PREFIX is unset, as every empty variable", c.Plugin.Prefix, "from-file"},
		{"max_file_size", c.Plugin.MaxFileSize, int64(2_000_000)},
		{"include_headers", c.Plugin.IncludeHeaders, true},
		{"compression kept", c.Plugin.Compression, batch.CompressionGzip},
		{"path_style", c.Plugin.PathStyle != nil && !*c.Plugin.PathStyle, true},
		{"state_table", c.Plugin.StateTable, "env-table"},
		{"max_file_age", c.Plugin.MaxFileAge, 90 * time.Second},
		{"max_attempts via max_retries", c.Plugin.MaxAttempts, 7},
		{"stream", c.Streams[0].Stream, "env-stream"},
		{"topics", c.Streams[0].Topics, []string{"x", "y"}},
		{"schema canonicalised", c.Streams[0].Schema, SchemaRaw},
		{"batch_length", c.Streams[0].BatchLength, uint32(10)},
		{"consumer_group", c.Streams[0].ConsumerGroup, "g"},
		{"poll_interval", c.Streams[0].PollInterval, 90 * time.Second},
		{"iggy address", c.Iggy.Address, "env:2"},
		{"iggy password", c.Iggy.Password.Reveal(), "env-pass"},
		{"iggy tls", c.Iggy.TLSEnabled, true},
		{"iggy tls domain", c.Iggy.TLSDomain, "iggy.local"},
		{"iggy connect timeout", c.Iggy.ConnectTimeout, 250 * time.Millisecond},
		{"sse", c.Plugin.ServerSideEncryption, "aws:kms"},
		{"sse key", c.Plugin.SSEKMSKeyID, "alias/k"},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
}

func TestEnvOnlyAndRegionFallback(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		wantRegion string
	}{
		{"SINK_REGION wins", map[string]string{"SINK_REGION": "eu-west-1", "AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "ap-south-1"}, "eu-west-1"},
		{"AWS_REGION", map[string]string{"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "ap-south-1"}, "us-west-2"},
		{"AWS_DEFAULT_REGION", map[string]string{"AWS_DEFAULT_REGION": "ap-south-1"}, "ap-south-1"},
		{"empty AWS_REGION skipped", map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "ap-south-1"}, "ap-south-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"SINK_BUCKET": "b", "SINK_STREAM": "s", "SINK_TOPICS": "t"}
			for k, v := range tt.env {
				env[k] = v
			}
			c, err := Load("", envOf(env))
			if err != nil {
				t.Fatal(err)
			}
			if c.Plugin.Region != tt.wantRegion {
				t.Errorf("region = %q, want %q", c.Plugin.Region, tt.wantRegion)
			}
			if c.Plugin.Bucket != "b" || c.Streams[0].Stream != "s" || c.Key != "s3" || !c.Enabled {
				t.Errorf("config = %s", c)
			}
		})
	}
}

func TestFromEnvReadsSinkConfig(t *testing.T) {
	path := filepath.Join("testdata", "upstream_seed.toml")
	c, err := FromEnv(envOf(map[string]string{"SINK_CONFIG": path, "SINK_BUCKET": "override"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugin.Bucket != "override" || c.Streams[0].Stream != "application_logs" {
		t.Errorf("FromEnv did not combine file and env: %s", c)
	}
	_, err = FromEnv(envOf(map[string]string{"SINK_CONFIG": filepath.Join(t.TempDir(), "missing.toml")}))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("missing file error = %v, want one naming the file and wrapping ErrNotExist", err)
	}
}

func TestTransformsInFileOrder(t *testing.T) {
	doc := minimal + `
[transforms.unwrap_envelope]
enabled = true
field = "data"

[transforms.add_fields]
enabled = true
[[transforms.add_fields.fields]]
key = "message"
value.static = "hello"

[transforms.delete_fields]
enabled = false
fields = ["a", "b"]
`
	c, err := loadString(t, doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, tr := range c.Transforms {
		types = append(types, tr.Type)
	}
	if want := []string{"unwrap_envelope", "add_fields", "delete_fields"}; !reflect.DeepEqual(types, want) {
		t.Fatalf("transform order = %q, want file order %q", types, want)
	}
	if c.Transforms[0].Table["field"] != "data" {
		t.Errorf("unwrap_envelope table = %v", c.Transforms[0].Table)
	}
	fields, _ := c.Transforms[1].Table["fields"].([]map[string]any)
	if len(fields) != 1 || fields[0]["key"] != "message" {
		t.Errorf("add_fields table = %#v", c.Transforms[1].Table)
	}
}

func TestOutputFormatAliases(t *testing.T) {
	for in, want := range map[string]string{"json_lines": "json_lines", "JSONL": "json_lines", "JsonLines": "json_lines", "json_array": "json_array", "RAW": "raw"} {
		c, err := loadString(t, minimal+"output_format = \""+in+"\"\n", nil)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if string(c.Plugin.OutputFormat) != want {
			t.Errorf("output_format %q = %q, want %q", in, c.Plugin.OutputFormat, want)
		}
	}
}

func TestMiscValues(t *testing.T) {
	c, err := loadString(t, minimal+`
max_attempts = 0
max_file_size = 1048576
file_rotation = "messages"
max_messages_per_file = 500
path_style = true
[iggy]
token = "tok"
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugin.MaxAttempts != 1 {
		t.Errorf("max_attempts 0 = %d, want 1 (upstream makes one attempt)", c.Plugin.MaxAttempts)
	}
	if c.Plugin.MaxFileSize != 1048576 || c.Plugin.MaxMessagesPerFile != 500 || c.Plugin.PathStyle == nil || !*c.Plugin.PathStyle {
		t.Errorf("plugin = %+v", c.Plugin)
	}
	if c.Iggy.Token.Reveal() != "tok" {
		t.Errorf("token = %q", c.Iggy.Token.Reveal())
	}
}

// TestOptionsCoverEveryField fails when a field of Plugin, Iggy or Stream has
// no Option (and so no TOML key, env var or README row).
func TestOptionsCoverEveryField(t *testing.T) {
	var c Config
	var s Stream
	covered := map[uintptr]bool{}
	for _, o := range options {
		covered[reflect.ValueOf(o.ptr(&c, &s)).Pointer()] = true
	}
	derived := map[string]bool{"Plugin.Template": true, "Plugin.PinnedSchema": true} // parsed from PathTemplate, ParquetSchema
	for _, st := range []struct {
		name string
		v    reflect.Value
	}{{"Plugin", reflect.ValueOf(&c.Plugin).Elem()}, {"Iggy", reflect.ValueOf(&c.Iggy).Elem()}, {"Stream", reflect.ValueOf(&s).Elem()}} {
		for i := 0; i < st.v.NumField(); i++ {
			name := st.name + "." + st.v.Type().Field(i).Name
			if !covered[st.v.Field(i).Addr().Pointer()] && !derived[name] {
				t.Errorf("field %s has no Option", name)
			}
		}
	}
}

func TestOptionsTable(t *testing.T) {
	seenKey, seenEnv := map[string]bool{}, map[string]bool{}
	for _, o := range Options() {
		if o.Doc == "" {
			t.Errorf("%s has no Doc", o.Key)
		}
		if seenKey[o.Key] || (o.Env != "" && seenEnv[o.Env]) {
			t.Errorf("duplicate key or env: %s %s", o.Key, o.Env)
		}
		seenKey[o.Key], seenEnv[o.Env] = true, true
		table, field, found := strings.Cut(o.Key, ".")
		if !found {
			continue
		}
		prefix := map[string]string{"plugin_config": "SINK_", "streams": "SINK_", "iggy": "IGGY_"}[table]
		if want := prefix + strings.ToUpper(field); o.Env != want {
			t.Errorf("%s: env %s, want %s (docs/configuration.md: section and key, upper-cased)", o.Key, o.Env, want)
		}
	}
	for _, k := range []string{"plugin_config.max_file_size", "iggy.address", "streams.topics", "plugin_config.state_table"} {
		if !seenKey[k] {
			t.Errorf("Options() lacks %s", k)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"8MiB", 8 << 20, ""},
		{"10MB", 10_000_000, ""},
		{"1000", 1000, ""},
		{"8M", 8_000_000, ""},
		{"8Mi", 8 << 20, ""},
		{"8k", 8000, ""},
		{"8kB", 8000, ""},
		{"1.5MiB", 1572864, ""},
		{" 8 MiB ", 8 << 20, ""},
		{"5TiB", 5 << 40, ""},
		{"2TB", 2_000_000_000_000, ""},
		{"0B", 0, ""},
		{"1.5B", 2, ""},
		{"8Mb", 0, `write "8MB"`},
		{"8mib", 0, `write "8MiB"`},
		{"8 Mbit", 0, `write "8MB"`},
		{"8b", 0, `write "8B"`},
		{"not_a_size", 0, "does not start with a number"},
		{"", 0, "empty"},
		{"-1", 0, "sign"},
		{"8XB", 0, `unknown unit "XB"`},
		{"1.2.3MB", 0, `bad number "1.2.3"`},
		{".5KB", 500, ""},
		{"5.KB", 5000, ""},
		{".", 0, "bad number"},
		{"99999999999EiB", 0, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseByteSize(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), strings.TrimSpace(tt.in)) {
					t.Fatalf("ParseByteSize(%q) = %d, %v; want error naming the input and containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
	if _, err := ParseByteSize("8Mb"); !errors.Is(err, ErrBitUnit) {
		t.Errorf("8Mb error %v does not wrap ErrBitUnit", err)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"100ms", 100 * time.Millisecond, ""},
		{"1s", time.Second, ""},
		{"5m", 5 * time.Minute, ""},
		{"1h", time.Hour, ""},
		{"1m30s", 90 * time.Second, ""},
		{"1m 30s", 90 * time.Second, ""},
		{"2 hours", 2 * time.Hour, ""},
		{"1.5h", 90 * time.Minute, ""},
		{"1d", 24 * time.Hour, ""},
		{"250us", 250 * time.Microsecond, ""},
		{"250µs", 250 * time.Microsecond, ""},
		{"0s", 0, ""},
		{"5", 0, "bare numbers are refused"},
		{"0", 0, "bare numbers are refused"},
		{"1m30", 0, `number "30" has no unit`},
		{"", 0, "empty"},
		{"-1s", 0, "sign"},
		{"5 fortnights", 0, `unknown unit "fortnights"`},
		{"s", 0, `expected a number before "s"`},
		{"300000000000h", 0, "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseDuration(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestKeySuggestions(t *testing.T) {
	if got := editdist.Closest("max_file_sise", tableKeys("plugin_config")); got != "max_file_size" {
		t.Errorf("closest = %q", got)
	}
	if !slices.Contains(tableKeys("plugin_config"), "max_retries") {
		t.Error("max_retries alias missing from suggestions")
	}
}

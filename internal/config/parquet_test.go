package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pinnedJSON = `{"fields":[{"name":"level","type":"string","required":true},{"name":"ctx","type":{"struct":[{"name":"user","type":"string"}]}}]}`

// TestParquetOptions: the parquet_* options, their defaults, the three
// ways to give a pinned schema, and error_prefix's default.
func TestParquetOptions(t *testing.T) {
	c, err := loadString(t, minimal+`output_format = "parquet"`+"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &c.Plugin
	if p.OutputFormat != "parquet" || p.ParquetCompression != "zstd" || p.ParquetRowGroupSize != 128<<20 || p.ParquetPageSize != 1<<20 || p.PinnedSchema != nil || p.ParquetKeepExtra {
		t.Errorf("defaults: %+v", p)
	}
	if got := p.ErrorsPrefix(); got != "_errors" {
		t.Errorf("error prefix without a prefix: %q", got)
	}
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte(pinnedJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	table := "\n[plugin_config.parquet_schema]\nfields = [{ name = \"level\", type = \"string\", required = true }, { name = \"ctx\", type = { struct = [{ name = \"user\", type = \"string\" }] } }]\n"
	for name, tc := range map[string]struct {
		doc string
		env map[string]string
	}{
		"file":        {minimal + "output_format = \"parquet\"\ninvalid_payload = \"error_object\"\nparquet_schema = \"" + file + "\"\n", nil},
		"inline":      {minimal + "output_format = \"parquet\"\ninvalid_payload = \"error_object\"\nparquet_schema = '" + pinnedJSON + "'\n", nil},
		"toml table":  {minimal + "output_format = \"parquet\"\ninvalid_payload = \"error_object\"\n" + table, nil},
		"environment": {minimal, map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_INVALID_PAYLOAD": "error_object", "SINK_PARQUET_SCHEMA": pinnedJSON, "SINK_PARQUET_KEEP_EXTRA": "true", "SINK_PARQUET_COMPRESSION": "SNAPPY", "SINK_PARQUET_ROW_GROUP_SIZE": "64MiB", "SINK_PARQUET_PAGE_SIZE": "64KiB", "SINK_ERROR_PREFIX": "/rejects/"}},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := loadString(t, tc.doc, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Plugin.PinnedSchema == nil {
				t.Fatal("no pinned schema")
			}
			if tc.env != nil {
				p := &c.Plugin
				if p.ParquetCompression != "snappy" || p.ParquetRowGroupSize != 64<<20 || p.ParquetPageSize != 64<<10 || !p.ParquetKeepExtra || p.ErrorsPrefix() != "rejects" {
					t.Errorf("from the environment: %+v (errors under %q)", p, p.ErrorsPrefix())
				}
			}
		})
	}
}

// TestParquetRules: one rule per row, each with a message naming the key,
// the value and what to do.
func TestParquetRules(t *testing.T) {
	pq := "output_format = \"parquet\"\n"
	for _, tc := range []struct {
		name string
		doc  string
		env  map[string]string
		want []string
	}{
		{"parquet and compression", minimal + pq + "compression = \"zstd\"\n", nil, []string{"plugin_config.compression", `"zstd"`, `must be "none" with output_format = "parquet"`, "parquet_compression"}},
		{"parquet option without parquet", minimal + "parquet_compression = \"gzip\"\n", nil, []string{"plugin_config.parquet_compression", `only used with output_format = "parquet"`}},
		{"parquet codec", minimal + pq + "parquet_compression = \"lz4\"\n", nil, []string{"plugin_config.parquet_compression", `"lz4"`, "zstd, snappy, gzip, none"}},
		{"row group too small", minimal + pq + "parquet_row_group_size = \"1KiB\"\n", nil, []string{"plugin_config.parquet_row_group_size", "64KiB and 5TiB"}},
		{"page too large", minimal + pq + "parquet_page_size = \"2GiB\"\n", nil, []string{"plugin_config.parquet_page_size", "1KiB and 1GiB"}},
		{"schema with base64", minimal + pq + "parquet_schema = '" + pinnedJSON + "'\n", nil, []string{"plugin_config.invalid_payload", `"error_object" or "fail"`, "base64"}},
		{"schema with text", strings.Replace(minimal, "topics = [", "schema = \"text\"\ntopics = [", 1) + pq + "invalid_payload = \"fail\"\nparquet_schema = '" + pinnedJSON + "'\n", nil, []string{"streams[0].schema", `"text"`, "must be json"}},
		{"schema file missing", minimal + pq + "invalid_payload = \"fail\"\nparquet_schema = \"/no/such/schema.json\"\n", nil, []string{"plugin_config.parquet_schema", "/no/such/schema.json", "read the schema file"}},
		{"schema invalid", minimal + pq + "invalid_payload = \"fail\"\nparquet_schema = '{\"fields\":[{\"name\":\"a\",\"type\":\"uint64\"}]}'\n", nil, []string{"plugin_config.parquet_schema", `unknown type "uint64"`}},
		{"schema not a table or string", minimal + pq + "invalid_payload = \"fail\"\nparquet_schema = 5\n", nil, []string{"plugin_config.parquet_schema", "a file path or JSON", "table"}},
		{"schema names a metadata column", minimal + pq + "invalid_payload = \"fail\"\nparquet_schema = '{\"fields\":[{\"name\":\"Offset\",\"type\":\"int64\"}]}'\n", nil, []string{"plugin_config.parquet_schema", `"Offset"`, "offset column", "include_metadata"}},
		{"keep_extra without schema", minimal + pq + "parquet_keep_extra = true\n", nil, []string{"plugin_config.parquet_keep_extra", "only used with parquet_schema"}},
		{"error_prefix without error_object", minimal + "error_prefix = \"errs\"\n", nil, []string{"plugin_config.error_prefix", `"errs"`, `invalid_payload = "error_object"`}},
		{"error_prefix equals prefix", minimal + "prefix = \"archive\"\ninvalid_payload = \"error_object\"\nerror_prefix = \"/archive/\"\n", nil, []string{"plugin_config.error_prefix", "must differ from prefix"}},
		{"error_prefix escapes", minimal + "invalid_payload = \"error_object\"\nerror_prefix = \"a/../b\"\n", nil, []string{"plugin_config.error_prefix", `".."`}},
		{"env parquet and compression", minimal, map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_COMPRESSION": "gzip"}, []string{"SINK_COMPRESSION", "plugin_config.compression", "parquet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadString(t, tc.doc, tc.env)
			if err == nil {
				t.Fatalf("loaded without error: %s", c)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("want one line, got %q", msg)
			}
		})
	}
	c, err := loadString(t, minimal+"prefix = \"archive\"\ninvalid_payload = \"error_object\"\n", nil)
	if err != nil || c.Plugin.ErrorsPrefix() != "archive/_errors" {
		t.Fatalf("error_object with the default error prefix: %v %q", err, c.Plugin.ErrorsPrefix())
	}
}

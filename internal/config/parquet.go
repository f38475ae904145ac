package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/parquet"
)

// loadPinnedSchema reads parquet_schema: "" for none, JSON text when it
// starts with '{' (inline, or a TOML table turned into JSON), else the
// path of a JSON file (relative to the working directory, as tls_ca_file).
func loadPinnedSchema(v string) (*parquet.PinnedSchema, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	data := []byte(v)
	if !strings.HasPrefix(v, "{") {
		b, err := os.ReadFile(v)
		if err != nil {
			return nil, fmt.Errorf("read the schema file: %w (give a JSON file's path, or the JSON itself)", err)
		}
		data = b
	}
	return parquet.ParseSchema(data)
}

// ErrorsPrefix is where error objects go: error_prefix, or by default
// "<prefix>/_errors" ("_errors" without a prefix).
func (p *Plugin) ErrorsPrefix() string {
	if p.ErrorPrefix != "" {
		return strings.Trim(p.ErrorPrefix, "/")
	}
	return strings.TrimPrefix(strings.Trim(p.Prefix, "/")+"/_errors", "/")
}

// checkParquet checks the rules between output_format, the parquet_*
// options, compression, invalid_payload and error_prefix.
func (l *loader) checkParquet() error {
	c := l.cfg
	p := &c.Plugin
	if p.ErrorPrefix != "" && strings.Trim(p.ErrorPrefix, "/") == strings.Trim(p.Prefix, "/") {
		e := l.errorFor("plugin_config.error_prefix", "must differ from prefix: error objects among the data objects would be read as data by a table over the prefix (the default is \"<prefix>/_errors\")")
		e.Value = strconv.Quote(p.ErrorPrefix)
		return e
	}
	if _, set := l.set["plugin_config.error_prefix"]; set && p.InvalidPayload != InvalidErrorObject {
		e := l.errorFor("plugin_config.error_prefix", fmt.Sprintf(`only used with invalid_payload = "error_object" (it is %q)`, p.InvalidPayload))
		e.Value = strconv.Quote(p.ErrorPrefix)
		return e
	}
	if !p.Parquet() {
		for _, k := range []string{"parquet_compression", "parquet_row_group_size", "parquet_page_size", "parquet_schema", "parquet_keep_extra"} {
			if _, set := l.set["plugin_config."+k]; set {
				return l.errorFor("plugin_config."+k, fmt.Sprintf(`only used with output_format = "parquet" (it is %q)`, p.OutputFormat))
			}
		}
		return nil
	}
	if p.Compression != batch.CompressionNone {
		e := l.errorFor("plugin_config.compression", `must be "none" with output_format = "parquet": a Parquet file compresses its own pages (parquet_compression, default zstd), and readers cannot open a compressed .parquet file`)
		e.Value = strconv.Quote(string(p.Compression))
		return e
	}
	if p.ParquetKeepExtra && p.PinnedSchema == nil {
		return l.errorFor("plugin_config.parquet_keep_extra", "only used with parquet_schema: an inferred schema keeps every member")
	}
	if p.PinnedSchema == nil {
		return nil
	}
	if p.InvalidPayload != InvalidErrorObject && p.InvalidPayload != InvalidFail {
		return l.errorFor("plugin_config.invalid_payload", fmt.Sprintf(`must be "error_object" or "fail" with parquet_schema (it is %q): a record that does not fit the schema cannot be kept as base64`, p.InvalidPayload))
	}
	for i, s := range c.Streams {
		if s.Schema != SchemaJSON {
			e := l.errorFor(fmt.Sprintf("streams[%d].schema", i), fmt.Sprintf("must be json with parquet_schema (it is %q): a pinned schema names the members of JSON payloads", s.Schema))
			e.Value = strconv.Quote(string(s.Schema))
			return e
		}
	}
	_, err := parquet.NewEncoder(parquet.Options{Payload: "json", Schema: p.PinnedSchema, KeepExtra: p.ParquetKeepExtra,
		IncludeMetadata: p.IncludeMetadata, IncludeHeaders: p.IncludeHeaders})
	if err != nil {
		return l.errorFor("plugin_config.parquet_schema", strings.TrimPrefix(err.Error(), "parquet: ")+" (rename it, or turn include_metadata / include_headers off)")
	}
	return nil
}

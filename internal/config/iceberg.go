package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// icebergKeys are the options only table_format = "iceberg" uses.
var icebergKeys = []string{"iceberg_catalog", "iceberg_catalog_uri", "iceberg_warehouse", "iceberg_namespace", "iceberg_table"}

// checkIceberg checks table_format and the iceberg_* options against each
// other and against output_format, so a bad combination fails at start
// rather than at the first commit.
// defaultForTables makes invalid_payload "error_object" under tables when
// it is not set: a record whose value the table's column type cannot hold
// goes to the error object, and base64 cannot keep it.
func (l *loader) defaultForTables() {
	p := &l.cfg.Plugin
	if _, set := l.set["plugin_config.invalid_payload"]; p.Tables() && !set {
		p.InvalidPayload = InvalidErrorObject
	}
}

func (l *loader) checkIceberg() error {
	p := &l.cfg.Plugin
	if p.Tables() && p.InvalidPayload != InvalidErrorObject && p.InvalidPayload != InvalidFail {
		e := l.errorFor("plugin_config.invalid_payload", fmt.Sprintf(`must be "error_object" (the default with tables) or "fail" with table_format = "iceberg" (it is %q): a record whose value the table's column type cannot hold cannot be kept as base64`, p.InvalidPayload))
		e.Value = strconv.Quote(string(p.InvalidPayload))
		return e
	}
	if !p.Tables() {
		for _, k := range icebergKeys {
			if _, set := l.set["plugin_config."+k]; set {
				return l.errorFor("plugin_config."+k, fmt.Sprintf(`only used with table_format = "iceberg" (it is %q)`, p.TableFormat))
			}
		}
		return nil
	}
	if !p.Parquet() {
		e := l.errorFor("plugin_config.table_format", fmt.Sprintf(`"iceberg" needs output_format = "parquet" (it is %q): an Iceberg table registers Parquet files`, p.OutputFormat))
		e.Value = strconv.Quote(string(p.TableFormat))
		return e
	}
	switch p.IcebergCatalog {
	case "":
		return l.errorFor("plugin_config.iceberg_catalog", `must be set with table_format = "iceberg": glue, s3tables or rest`)
	case CatalogREST:
		if p.IcebergCatalogURI == "" {
			return l.errorFor("plugin_config.iceberg_catalog_uri", `must be set with iceberg_catalog = "rest": the catalog's URL, e.g. http://127.0.0.1:8181`)
		}
	case CatalogS3Tables:
		if !strings.HasPrefix(p.IcebergWarehouse, "arn:") || !strings.Contains(p.IcebergWarehouse, ":bucket/") {
			e := l.errorFor("plugin_config.iceberg_warehouse", `must be the table bucket's ARN with iceberg_catalog = "s3tables" (arn:aws:s3tables:<region>:<account>:bucket/<name>)`)
			e.Value = strconv.Quote(p.IcebergWarehouse)
			return e
		}
	case CatalogGlue:
		if p.IcebergWarehouse != "" && !strings.HasPrefix(p.IcebergWarehouse, "s3://") {
			e := l.errorFor("plugin_config.iceberg_warehouse", `must be an s3:// location with iceberg_catalog = "glue" (unset: s3://<bucket>/<prefix>/_iceberg)`)
			e.Value = strconv.Quote(p.IcebergWarehouse)
			return e
		}
	}
	if p.IcebergCatalogURI != "" {
		u, err := url.Parse(p.IcebergCatalogURI)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e := l.errorFor("plugin_config.iceberg_catalog_uri", "must be an http:// or https:// URL")
			e.Value = strconv.Quote(p.IcebergCatalogURI)
			return e
		}
		if p.Glue() {
			return l.errorFor("plugin_config.iceberg_catalog_uri", `not used with iceberg_catalog = "glue" (set AWS_ENDPOINT_URL_GLUE for another Glue endpoint)`)
		}
	}
	if !validIcebergName(p.IcebergNamespace) {
		e := l.errorFor("plugin_config.iceberg_namespace", "must be 1 to 255 characters of a-z, 0-9 and _ (Glue and Athena fold names to lower case)")
		e.Value = strconv.Quote(p.IcebergNamespace)
		return e
	}
	if err := CheckTableTemplate(p.IcebergTable); err != nil {
		e := l.errorFor("plugin_config.iceberg_table", err.Error())
		e.Value = strconv.Quote(p.IcebergTable)
		return e
	}
	return nil
}

// CheckTableTemplate reports why t cannot name tables: its text outside
// {stream} and {topic} must be a-z, 0-9 and _ (placeholder values are
// folded to that when a name is made).
func CheckTableTemplate(t string) error {
	if t == "" {
		return fmt.Errorf("must not be empty")
	}
	rest := strings.NewReplacer("{stream}", "", "{topic}", "").Replace(t)
	if rest != "" && !validIcebergName(rest) {
		return fmt.Errorf("may hold only {stream}, {topic}, a-z, 0-9 and _")
	}
	if len(t) > 255 {
		return fmt.Errorf("is longer than 255 characters")
	}
	return nil
}

func validIcebergName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

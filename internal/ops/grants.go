package ops

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// StackGrantsVar names the variable through which the template tells the
// function what its role was granted from the deploy parameters.
const StackGrantsVar = "SINK_STACK_GRANTS"

// StackGrants are the deploy parameters that shape the function's role.
// A configuration file can ask for more than they granted (a credentials
// secret, a KMS key, tables, fan-out); that is refused at start with the
// parameter to set, instead of failing later as "access denied".
type StackGrants struct {
	CredentialsSecret string             // IggyCredentialsSecret: the one secret the role may read
	S3KmsKey          string             // S3KmsKeyArn: the one customer-managed key the role may use for S3
	TableFormat       config.TableFormat // TableFormat: "iceberg" grants the catalog
	IcebergCatalog    config.Catalog     // IcebergCatalog: the catalog granted with tables
	MaxWorkers        int                // MaxWorkers: above 1 the role may invoke the function
	Prefix            string             // Prefix: the role's objects are under it ("" = the whole bucket)
}

// ParseStackGrants reads the template's "Name=value,..." list, whose last
// item, Prefix, runs to its end (a prefix may hold a comma).
func ParseStackGrants(v string) (StackGrants, error) {
	var g StackGrants
	for rest := v; rest != ""; {
		if p, ok := strings.CutPrefix(rest, "Prefix="); ok {
			g.Prefix = p
			break
		}
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return g, fmt.Errorf("%s: %q is not Name=value", StackGrantsVar, part)
		}
		switch name {
		case "IggyCredentialsSecret":
			g.CredentialsSecret = value
		case "S3KmsKeyArn":
			g.S3KmsKey = value
		case "TableFormat":
			g.TableFormat = config.TableFormat(value)
		case "IcebergCatalog":
			g.IcebergCatalog = config.Catalog(value)
		case "MaxWorkers":
			if value == "" {
				continue
			}
			n, err := strconv.Atoi(value)
			if err != nil {
				return g, fmt.Errorf("%s: MaxWorkers=%q is not a number", StackGrantsVar, value)
			}
			g.MaxWorkers = n
		}
	}
	return g, nil
}

// Check refuses a configuration that needs a grant the stack's role lacks,
// or that names no Iggy server (the default 127.0.0.1 cannot be one from a
// Lambda function), naming the setting, where it came from and the deploy
// parameter to set.
func (g StackGrants) Check(cfg *config.Config) error {
	var problems []string
	refuse := func(key, value, fix string) {
		problems = append(problems, fmt.Sprintf("%s = %s (%s): %s", key, value, originOf(cfg, key), fix))
	}
	if s := cfg.Iggy.CredentialsSecret; s != "" && s != g.CredentialsSecret {
		refuse("iggy.credentials_secret", strconv.Quote(s),
			fmt.Sprintf("the stack's role may read only the secret IggyCredentialsSecret names (%s): deploy with IggyCredentialsSecret=%s", orNone(g.CredentialsSecret), s))
	}
	if k := cfg.Plugin.SSEKMSKeyID; k != "" && k != g.S3KmsKey && !awsManagedKey(k) {
		refuse("plugin_config.sse_kms_key_id", strconv.Quote(k),
			fmt.Sprintf("the stack's role may use only the KMS key S3KmsKeyArn names (%s): deploy with S3KmsKeyArn=<the key's ARN>", orNone(g.S3KmsKey)))
	}
	if cfg.Plugin.Tables() && g.TableFormat != config.TableIceberg {
		refuse("plugin_config.table_format", `"iceberg"`,
			fmt.Sprintf("the stack was deployed without tables, so its role may not reach the catalog: deploy with TableFormat=iceberg IcebergCatalog=%s (and that catalog's parameters)", orOf(string(cfg.Plugin.IcebergCatalog), "<glue, s3tables or rest>")))
	} else if c := cfg.Plugin.IcebergCatalog; cfg.Plugin.Tables() && c != g.IcebergCatalog {
		refuse("plugin_config.iceberg_catalog", strconv.Quote(string(c)),
			fmt.Sprintf("the stack's role was granted the catalog IcebergCatalog names (%s): deploy with IcebergCatalog=%s", orNone(string(g.IcebergCatalog)), c))
	}
	if n := cfg.Plugin.MaxWorkers; n > 1 && g.MaxWorkers <= 1 {
		refuse("plugin_config.max_workers", strconv.Itoa(n),
			fmt.Sprintf("the stack's role may not start workers (MaxWorkers is empty or 1): deploy with MaxWorkers=%d", n))
	}
	if cfg.Iggy.CredentialsSecret == "" && originOf(cfg, "iggy.address") == "the default" {
		problems = append(problems, fmt.Sprintf("iggy.address is not set (the default %s is this very function): deploy with IggyAddress=host:port, or set address in the configuration file's [iggy] table", cfg.Iggy.Address))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("the configuration does not fit this stack (its parameters, %s):\n  - %s", StackGrantsVar, strings.Join(problems, "\n  - "))
}

// awsManagedKey tells a KMS key AWS manages for S3 (alias/aws/s3, by name
// or ARN), which needs no grant.
func awsManagedKey(k string) bool {
	return strings.HasPrefix(k, "alias/aws/") || strings.Contains(k, ":alias/aws/")
}

// Warnings are what the function should say at start of a configuration
// the stack runs, but with more access than it needs.
func (g StackGrants) Warnings(cfg *config.Config) []string {
	var out []string
	if p := cfg.Plugin.Prefix; p != "" && g.Prefix == "" {
		out = append(out, fmt.Sprintf("the role may read and write the whole bucket %q, though the objects go under %q: deploy with Prefix=%s to hold it to the prefix", cfg.Plugin.Bucket, p+"/", p))
	}
	return out
}

// originOf says where key's value came from, for messages.
func originOf(cfg *config.Config, key string) string {
	for _, s := range cfg.Effective() {
		if s.Key != key {
			continue
		}
		switch s.Source {
		case config.SourceFile:
			return "from the configuration file " + cfg.File()
		case config.SourceEnv:
			return "from " + s.Var
		}
	}
	return "the default"
}

func orNone(s string) string { return orOf(s, "none") }

func orOf(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

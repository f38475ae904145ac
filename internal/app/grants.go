package app

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
	CredentialsSecret string // IggyCredentialsSecret: the one secret the role may read
	S3KmsKey          string // S3KmsKeyArn: the one customer-managed key the role may use for S3
	TableFormat       string // TableFormat: "iceberg" grants the catalog
	MaxWorkers        int    // MaxWorkers: above 1 the role may invoke the function
}

// ParseStackGrants reads the template's "Name=value,..." list.
func ParseStackGrants(v string) (StackGrants, error) {
	var g StackGrants
	for _, part := range strings.Split(v, ",") {
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
			g.TableFormat = value
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
// naming the setting, where it came from and the deploy parameter to set.
func (g StackGrants) Check(cfg *config.Config) error {
	var problems []string
	refuse := func(key, value, fix string) {
		problems = append(problems, fmt.Sprintf("%s = %s (%s): %s", key, value, originOf(cfg, key), fix))
	}
	if s := cfg.Iggy.CredentialsSecret; s != "" && s != g.CredentialsSecret {
		refuse("iggy.credentials_secret", strconv.Quote(s),
			fmt.Sprintf("the stack's role may read only the secret IggyCredentialsSecret names (%s): deploy with IggyCredentialsSecret=%s", orNone(g.CredentialsSecret), s))
	}
	if k := cfg.Plugin.SSEKMSKeyID; k != "" && k != g.S3KmsKey && !strings.HasPrefix(k, "alias/aws/") {
		refuse("plugin_config.sse_kms_key_id", strconv.Quote(k),
			fmt.Sprintf("the stack's role may use only the KMS key S3KmsKeyArn names (%s): deploy with S3KmsKeyArn=<the key's ARN>", orNone(g.S3KmsKey)))
	}
	if cfg.Plugin.TableFormat == "iceberg" && g.TableFormat != "iceberg" {
		refuse("plugin_config.table_format", `"iceberg"`,
			fmt.Sprintf("the stack was deployed without tables, so its role may not reach the catalog: deploy with TableFormat=iceberg IcebergCatalog=%s (and that catalog's parameters)", orOf(cfg.Plugin.IcebergCatalog, "<glue, s3tables or rest>")))
	}
	if n := cfg.Plugin.MaxWorkers; n > 1 && g.MaxWorkers <= 1 {
		refuse("plugin_config.max_workers", strconv.Itoa(n),
			fmt.Sprintf("the stack's role may not start workers (MaxWorkers is empty or 1): deploy with MaxWorkers=%d", n))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("the configuration needs what this stack's role was not granted (%s):\n  - %s", StackGrantsVar, strings.Join(problems, "\n  - "))
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

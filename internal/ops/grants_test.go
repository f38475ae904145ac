package ops

import (
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// TestStackGrants: a configuration file that asks for more than the deploy
// parameters granted the role is refused with the parameter to set.
func TestStackGrants(t *testing.T) {
	const file = `
[[streams]]
stream = "s"
topics = ["t"]
[plugin_config]
bucket = "b"
region = "eu-west-1"
server_side_encryption = "aws:kms"
%s
[iggy]
credentials_secret = "prod/iggy"
`
	load := func(extra string) *config.Config {
		t.Helper()
		cfg, err := config.LoadBytes([]byte(strings.Replace(file, "%s", extra, 1)), "sink.toml", func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for _, tc := range []struct {
		grants string
		extra  string
		want   []string // empty: accepted
	}{
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=,TableFormat=,MaxWorkers=", "", nil},
		{"IggyCredentialsSecret=,S3KmsKeyArn=,TableFormat=,MaxWorkers=", "", []string{
			`iggy.credentials_secret = "prod/iggy" (from the configuration file sink.toml)`, "deploy with IggyCredentialsSecret=prod/iggy"}},
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=,TableFormat=,MaxWorkers=1", "max_workers = 4", []string{
			"plugin_config.max_workers = 4", "deploy with MaxWorkers=4"}},
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=,TableFormat=,MaxWorkers=4", "max_workers = 4", nil},
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=,TableFormat=none,MaxWorkers=", "output_format = \"parquet\"\ntable_format = \"iceberg\"\niceberg_catalog = \"glue\"", []string{
			`plugin_config.table_format = "iceberg"`, "deploy with TableFormat=iceberg IcebergCatalog=glue"}},
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=,TableFormat=,MaxWorkers=", `sse_kms_key_id = "arn:aws:kms:eu-west-1:123456789012:key/abc"`, []string{
			"plugin_config.sse_kms_key_id", "deploy with S3KmsKeyArn="}},
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=arn:aws:kms:eu-west-1:123456789012:key/abc,TableFormat=,MaxWorkers=", `sse_kms_key_id = "arn:aws:kms:eu-west-1:123456789012:key/abc"`, nil},
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=,TableFormat=,MaxWorkers=", `sse_kms_key_id = "alias/aws/s3"`, nil},
		{"IggyCredentialsSecret=prod/iggy,S3KmsKeyArn=,TableFormat=,MaxWorkers=", `sse_kms_key_id = "arn:aws:kms:eu-west-1:123456789012:alias/aws/s3"`, nil},
	} {
		g, err := ParseStackGrants(tc.grants)
		if err != nil {
			t.Fatal(err)
		}
		err = g.Check(load(tc.extra))
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s with %q: %v", tc.grants, tc.extra, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s with %q: accepted", tc.grants, tc.extra)
			continue
		}
		for _, w := range append(tc.want, StackGrantsVar) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s with %q: %q does not say %q", tc.grants, tc.extra, err, w)
			}
		}
	}
	if _, err := ParseStackGrants("MaxWorkers=many"); err == nil {
		t.Error("MaxWorkers=many parsed")
	}
	// Prefix runs to the end: a prefix may hold a comma.
	g, err := ParseStackGrants("IggyCredentialsSecret=s,S3KmsKeyArn=,TableFormat=iceberg,IcebergCatalog=glue,MaxWorkers=2,Prefix=raw,2026")
	if err != nil || g.Prefix != "raw,2026" || g.IcebergCatalog != "glue" || g.MaxWorkers != 2 || g.CredentialsSecret != "s" {
		t.Errorf("parsed %+v, %v", g, err)
	}
}

// TestStackGrantsCatalogAddressPrefix: tables granted for another catalog
// are refused; a configuration naming no Iggy server is refused on Lambda;
// a prefix the role is not held to is a warning.
func TestStackGrantsCatalogAddressPrefix(t *testing.T) {
	load := func(doc string) *config.Config {
		t.Helper()
		cfg, err := config.LoadBytes([]byte("[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\n[plugin_config]\nbucket = \"b\"\nregion = \"eu-west-1\"\n"+doc), "sink.toml", func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	withAddress := "[iggy]\naddress = \"iggy:8090\"\n"
	tables := "output_format = \"parquet\"\ntable_format = \"iceberg\"\niceberg_catalog = \"glue\"\n"
	g, _ := ParseStackGrants("IggyCredentialsSecret=,S3KmsKeyArn=,TableFormat=iceberg,IcebergCatalog=rest,MaxWorkers=,Prefix=")
	if err := g.Check(load(tables + withAddress)); err == nil || !strings.Contains(err.Error(), "deploy with IcebergCatalog=glue") {
		t.Errorf("glue tables on a stack granted rest: %v", err)
	}
	g.IcebergCatalog = "glue"
	if err := g.Check(load(tables + withAddress)); err != nil {
		t.Errorf("glue tables on a stack granted glue: %v", err)
	}
	if err := g.Check(load("")); err == nil || !strings.Contains(err.Error(), "iggy.address is not set") || !strings.Contains(err.Error(), "deploy with IggyAddress=") {
		t.Errorf("no Iggy address: %v", err)
	}
	cfg := load("prefix = \"raw\"\n" + withAddress)
	if w := g.Warnings(cfg); len(w) != 1 || !strings.Contains(w[0], "deploy with Prefix=raw") {
		t.Errorf("prefix without the Prefix grant: %v", w)
	}
	g.Prefix = "raw"
	if w := g.Warnings(cfg); len(w) != 0 {
		t.Errorf("prefix with its grant: %v", w)
	}
}

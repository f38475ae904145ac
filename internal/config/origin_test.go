package config

import (
	"errors"
	"strings"
	"testing"
)

const originFile = `
[[streams]]
stream = "orders"
topics = ["created"]
consumer_group = "orders-archive"

[plugin_config]
bucket = "lake"
region = "eu-west-1"
prefix = "raw/iggy"
compression = "zstd"

[iggy]
password = "file-secret"
`

// TestReplacedValuesAreReported: a variable that replaces a file value is
// listed with both values (secrets masked); one that repeats it, or sets a
// key the file left out, is not.
func TestReplacedValuesAreReported(t *testing.T) {
	c, err := loadString(t, originFile, map[string]string{
		"SINK_PREFIX":         "other",
		"SINK_COMPRESSION":    "zstd", // the same value: nothing replaced
		"SINK_CONSUMER_GROUP": "iggy-connect-sink-s3",
		"IGGY_PASSWORD":       "env-secret",
		"SINK_MAX_FILE_AGE":   "1m", // not in the file
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Replacement{
		{Key: "streams[0].consumer_group", Var: "SINK_CONSUMER_GROUP", File: `"orders-archive"`, Env: `"iggy-connect-sink-s3"`},
		{Key: "plugin_config.prefix", Var: "SINK_PREFIX", File: `"raw/iggy"`, Env: `"other"`},
		{Key: "iggy.password", Var: "IGGY_PASSWORD", File: `"` + redacted + `"`, Env: `"` + redacted + `"`},
	}
	if len(c.Replaced) != len(want) {
		t.Fatalf("replaced %+v, want %+v", c.Replaced, want)
	}
	for i := range want {
		if c.Replaced[i] != want[i] {
			t.Errorf("replaced[%d] = %+v, want %+v", i, c.Replaced[i], want[i])
		}
	}
	for _, r := range c.Replaced {
		if strings.Contains(r.File+r.Env, "secret") {
			t.Errorf("a secret is shown: %+v", r)
		}
	}
}

// TestEffectiveSources: every value says where it came from.
func TestEffectiveSources(t *testing.T) {
	c, err := loadString(t, originFile, map[string]string{"SINK_MAX_FILE_AGE": "1m", "IGGY_ADDRESS": "iggy:8090"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range c.Effective() {
		got[s.Key] = s
	}
	for key, want := range map[string]Setting{
		"plugin_config.prefix":            {Value: `"raw/iggy"`, Source: SourceFile},
		"plugin_config.region":            {Value: `"eu-west-1"`, Source: SourceFile},
		"plugin_config.max_file_age":      {Value: "1m0s", Source: SourceEnv, Var: "SINK_MAX_FILE_AGE"},
		"plugin_config.max_file_size":     {Value: "8388608", Source: SourceDefault},
		"iggy.address":                    {Value: `"iggy:8090"`, Source: SourceEnv, Var: "IGGY_ADDRESS"},
		"iggy.password":                   {Value: `"` + redacted + `"`, Source: SourceFile},
		"streams[0].consumer_group":       {Value: `"orders-archive"`, Source: SourceFile},
		"streams[0].batch_length":         {Value: "1000", Source: SourceDefault},
		"plugin_config.state_table":       {Value: `"iggy-s3-sink-state"`, Source: SourceDefault},
		"plugin_config.metrics_namespace": {Value: `"IggyS3Sink"`, Source: SourceDefault},
	} {
		s, ok := got[key]
		want.Key = key
		if !ok || s != want {
			t.Errorf("%s: %+v, want %+v", key, s, want)
		}
	}
	// A region from AWS_REGION says so.
	c, err = loadString(t, streamsOnly+"[plugin_config]\nbucket = \"b\"\n", map[string]string{"AWS_REGION": "eu-north-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Effective() {
		if s.Key == "plugin_config.region" && (s.Source != SourceEnv || s.Var != "AWS_REGION" || s.Value != `"eu-north-1"`) {
			t.Errorf("region: %+v", s)
		}
	}
}

// TestRegionShape: a name that cannot be an AWS region is refused when the
// sink talks to AWS S3, with the likely fix; any name goes with an endpoint.
func TestRegionShape(t *testing.T) {
	for _, tc := range []struct {
		region string
		env    map[string]string
		want   []string // empty: accepted
	}{
		{"us-east-1", nil, nil},
		{"us-gov-west-1", nil, nil},
		{"cn-northwest-1", nil, nil},
		{"eusc-de-east-1", nil, nil},
		{"us-east1", nil, []string{"plugin_config.region", `"us-east1"`, `did you mean "us-east-1"`}},
		{"EU_WEST_1", nil, []string{`did you mean "eu-west-1"`}},
		{"auto", nil, []string{"plugin_config.region", `"auto"`, "not an AWS region", "endpoint"}},
		{"auto", map[string]string{"SINK_ENDPOINT": "https://acct.r2.cloudflarestorage.com"}, nil},
		{"garage", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:3900"}, nil},
	} {
		_, err := loadString(t, streamsOnly+"[plugin_config]\nbucket = \"b\"\nregion = \""+tc.region+"\"\n", tc.env)
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("region %q %v: %v", tc.region, tc.env, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("region %q accepted", tc.region)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("region %q: %q does not say %q", tc.region, err, w)
			}
		}
	}
	// From AWS_REGION, the message names the variable.
	_, err := loadString(t, streamsOnly+"[plugin_config]\nbucket = \"b\"\n", map[string]string{"AWS_REGION": "us-east1"})
	if err == nil || !strings.Contains(err.Error(), "AWS_REGION") || !strings.Contains(err.Error(), `"us-east-1"`) {
		t.Errorf("AWS_REGION=us-east1: %v", err)
	}
}

// TestAllMissingInOneMessage: a first configuration learns every missing
// required setting from one error, not one per run.
func TestAllMissingInOneMessage(t *testing.T) {
	_, err := loadString(t, "[plugin_config]\nfile_rotation = \"messages\"\n", nil)
	if err == nil {
		t.Fatal("loaded")
	}
	var me *MissingError
	if !errors.As(err, &me) || len(me.Missing) != 4 {
		t.Fatalf("%v: want a MissingError of 4", err)
	}
	for _, w := range []string{"4 required settings are missing", "plugin_config.bucket (env SINK_BUCKET)", "plugin_config.region (env SINK_REGION)", "AWS_REGION",
		"plugin_config.max_messages_per_file (env SINK_MAX_MESSAGES_PER_FILE)", "SINK_STREAM and SINK_TOPICS"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "plugin_config.bucket" {
		t.Errorf("errors.As finds %+v, want the bucket's error first", ce)
	}
	// Missing stream and topics of two entries are all named.
	_, err = loadString(t, "[[streams]]\nbatch_length = 5\n[[streams]]\nstream = \"x\"\n[plugin_config]\nbucket = \"b\"\nregion = \"us-east-1\"\n", nil)
	for _, w := range []string{"3 required settings", "streams[0].stream", "streams[0].topics", "streams[1].topics"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v does not say %q", err, w)
		}
	}
}

// TestServicesRegion: the bucket's region is the file's; the stack's own
// resources (state table, secret, catalog) are in the environment's region.
func TestServicesRegion(t *testing.T) {
	for _, tc := range []struct {
		fileRegion, awsRegion, bucket, services string
	}{
		{"eu-west-1", "us-east-1", "eu-west-1", "us-east-1"},
		{"eu-west-1", "", "eu-west-1", "eu-west-1"},
		{"", "us-east-2", "us-east-2", "us-east-2"},
	} {
		doc := streamsOnly + "[plugin_config]\nbucket = \"b\"\n"
		if tc.fileRegion != "" {
			doc += "region = \"" + tc.fileRegion + "\"\n"
		}
		env := map[string]string{}
		if tc.awsRegion != "" {
			env["AWS_REGION"] = tc.awsRegion
		}
		c, err := loadString(t, doc, env)
		if err != nil {
			t.Fatal(err)
		}
		if c.Plugin.Region != tc.bucket || c.ServicesRegion != tc.services {
			t.Errorf("file %q AWS_REGION %q: bucket region %q, services %q; want %q, %q", tc.fileRegion, tc.awsRegion, c.Plugin.Region, c.ServicesRegion, tc.bucket, tc.services)
		}
	}
}

// TestEffectiveRedactsURLs: a URL's userinfo never reaches the listing.
func TestEffectiveRedactsURLs(t *testing.T) {
	c, err := loadString(t, streamsOnly+"[plugin_config]\nbucket = \"b\"\nregion = \"us-east-1\"\n", map[string]string{
		"SINK_ENDPOINT": "https://user:s3cret@store.example", "SINK_ICEBERG_CATALOG_URI": "https://cat:t0ken@catalog.example/api",
		"SINK_OUTPUT_FORMAT": "parquet", "SINK_TABLE_FORMAT": "iceberg", "SINK_ICEBERG_CATALOG": "rest"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Effective() {
		if strings.Contains(s.Value, "s3cret") || strings.Contains(s.Value, "t0ken") {
			t.Errorf("%s = %s shows a URL's password", s.Key, s.Value)
		}
	}
}

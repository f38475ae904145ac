package deploytest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// lambdaRuntime is what Lambda itself puts in every function's environment,
// beside the template's variables (those of it the sink reads).
var lambdaRuntime = map[string]string{
	"AWS_REGION":               testRegion,
	"AWS_DEFAULT_REGION":       testRegion,
	"AWS_LAMBDA_FUNCTION_NAME": testStackName,
	"LAMBDA_TASK_ROOT":         "/var/task",
}

// deployedEnv is the function's environment as deployed with s's parameters:
// every variable the template gives, and Lambda's own.
func deployedEnv(t *testing.T, s *stack) map[string]string {
	t.Helper()
	env := functionEnv(t, s)
	maps.Copy(env, lambdaRuntime)
	return env
}

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// stackOwned are the options the stack itself sets, whatever a file says:
// its role may write only to the bucket it was given, use only its own table
// and (with tables) its Iceberg namespace, and its alarms and dashboard read
// its own metrics namespace.
var stackOwned = []string{"plugin_config.bucket", "plugin_config.state_table", "plugin_config.metrics_namespace", "plugin_config.iceberg_namespace"}

// userFiles are the configuration files users deploy: every example, and the
// upstream connector's TOML from its documentation page.
func userFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "examples", "*.toml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("examples/*.toml: %v %v", files, err)
	}
	return append(files, filepath.Join(repoRoot(t), "internal", "config", "testdata", "upstream_seed.toml"))
}

// deployParams are the parameters a user gives to deploy a file: the bucket
// (required), the file itself, the Iggy address when the file has none (the
// upstream connector's has not), and the grants its settings need (a secret,
// a KMS key, tables, fan-out); every other parameter stays at its default.
func deployParams(cfg *config.Config, rel string) map[string]string {
	p := map[string]string{"SinkConfig": rel, "BucketName": cfg.Plugin.Bucket}
	if settings(cfg)["iggy.address"].Source == config.SourceDefault && cfg.Iggy.CredentialsSecret == "" {
		p["IggyAddress"] = "iggy.internal:8090"
	}
	if s := cfg.Iggy.CredentialsSecret; s != "" {
		p["IggyCredentialsSecret"] = s
	}
	if k := cfg.Plugin.SSEKMSKeyID; strings.HasPrefix(k, "arn:") {
		p["S3KmsKeyArn"] = k
	}
	if cfg.Plugin.Prefix != "" {
		p["Prefix"] = cfg.Plugin.Prefix // the role held to the prefix
	}
	if cfg.Plugin.TableFormat == "iceberg" {
		p["TableFormat"], p["IcebergCatalog"] = "iceberg", string(cfg.Plugin.IcebergCatalog)
	}
	if n := cfg.Plugin.MaxWorkers; n > 1 {
		p["MaxWorkers"] = strconv.Itoa(n)
	}
	return p
}

func settings(cfg *config.Config) map[string]config.Setting {
	m := map[string]config.Setting{}
	for _, s := range cfg.Effective() {
		m[s.Key] = s
	}
	return m
}

// loadUserFile reads one of userFiles as the function would without the
// template's variables (Lambda's own only): what the file configures.
func loadUserFile(t *testing.T, path string) (data []byte, rel string, cfg *config.Config) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ = filepath.Rel(repoRoot(t), path)
	cfg, err = config.LoadBytes(data, rel, lookup(lambdaRuntime))
	if err != nil {
		t.Fatalf("%s does not load: %v", rel, err)
	}
	return data, rel, cfg
}

// TestDeployedEnvironmentKeepsTheFile deploys each file users deploy as the
// README says (SinkConfig and the bucket; every other parameter at its
// default, but the grants the file needs) and loads it with the environment
// template.yaml gives the function: every value the file or the sink's
// defaults set holds, but for the stack's own bucket, table and metrics
// namespace, which replace the file's with a line in the log.
func TestDeployedEnvironmentKeepsTheFile(t *testing.T) {
	tpl := templateYAML(t)
	for _, path := range userFiles(t) {
		data, rel, want := loadUserFile(t, path)
		t.Run(rel, func(t *testing.T) {
			params := deployParams(want, rel)
			env := deployedEnv(t, newStack(t, tpl, params))
			got, err := config.LoadBytes(data, rel, lookup(env))
			if err != nil {
				t.Fatalf("the deployed function cannot load %s: %v", rel, err)
			}
			gotSettings := settings(got)
			for _, w := range want.Effective() {
				if slices.Contains(stackOwned, w.Key) || (w.Key == "iggy.address" && params["IggyAddress"] != "") {
					continue // the stack's own; the address the file lacks, given at deploy
				}
				if g := gotSettings[w.Key]; g.Value != w.Value {
					t.Errorf("%s: %s gives %s (%s); the deployed function runs %s (%s %s)", rel, w.Key, w.Value, w.Source, g.Value, g.Source, g.Var)
				}
			}
			for _, r := range got.Replaced {
				if !slices.Contains(stackOwned, r.Key) {
					t.Errorf("%s: the template's %s replaced the file's %s = %s by %s", rel, r.Var, r.Key, r.File, r.Env)
				}
			}
			// The stack's own values replace the file's, and the function says so.
			for _, key := range stackOwned {
				w, g := settings(want)[key], gotSettings[key]
				replaced := slices.ContainsFunc(got.Replaced, func(r config.Replacement) bool { return r.Key == key })
				if w.Source == config.SourceFile && w.Value != g.Value && !replaced {
					t.Errorf("%s: %s = %s in the file became %s with no replacement reported", rel, key, w.Value, g.Value)
				}
			}
			grants, err := ops.ParseStackGrants(env[ops.StackGrantsVar])
			if err != nil {
				t.Fatal(err)
			}
			if err := grants.Check(got); err != nil {
				t.Errorf("%s deployed with %v: %v", rel, params, err)
			}
			if w := grants.Warnings(got); len(w) > 0 {
				t.Errorf("%s deployed with %v: warnings %v", rel, params, w)
			}
			// Without the grants the file needs, the function refuses it at start and names each.
			for _, name := range []string{"IggyCredentialsSecret", "S3KmsKeyArn", "TableFormat", "MaxWorkers", "IggyAddress"} {
				if _, needed := params[name]; !needed {
					continue
				}
				less := maps.Clone(params)
				delete(less, name)
				env := deployedEnv(t, newStack(t, tpl, less))
				cfg, err := config.LoadBytes(data, rel, lookup(env))
				if err != nil {
					t.Fatal(err)
				}
				grants, _ := ops.ParseStackGrants(env[ops.StackGrantsVar])
				if err := grants.Check(cfg); err == nil || !strings.Contains(err.Error(), "deploy with "+name+"=") {
					t.Errorf("%s deployed without %s: %v; want a refusal naming the parameter", rel, name, err)
				}
			}
			// Without Prefix the role may touch the whole bucket: it runs, and says so.
			if prefix := params["Prefix"]; prefix != "" {
				less := maps.Clone(params)
				delete(less, "Prefix")
				grants, _ := ops.ParseStackGrants(deployedEnv(t, newStack(t, tpl, less))[ops.StackGrantsVar])
				if w := grants.Warnings(got); len(w) != 1 || !strings.Contains(w[0], "deploy with Prefix="+prefix) {
					t.Errorf("%s deployed without Prefix: warnings %v; want one naming Prefix=%s", rel, w, prefix)
				}
			}
		})
	}
}

// TestDeployedParametersWin: a parameter given at deploy wins over the file
// (it is a value the user set), and the function reports each file value it
// replaced, with both values.
func TestDeployedParametersWin(t *testing.T) {
	tpl := templateYAML(t)
	data, rel, _ := loadUserFile(t, filepath.Join(repoRoot(t), "internal", "config", "testdata", "upstream_seed.toml"))
	params := map[string]string{
		"SinkConfig": rel, "BucketName": "my-data-lake",
		"Prefix": "explicit/prefix", "PathTemplate": "{stream}/{topic}/{date}", "Compression": "gzip",
		"MaxFileSize": "1MiB", "MaxFileAge": "30s", "ConsumerGroup": "explicit-group", "OutputFormat": "json_array",
		"FileRotation": "messages", "MaxMessagesPerFile": "500", "IncludeHeaders": "true", "IggyProtocol": "0.9",
		"RunTimeout": "30s", "Stream": "other", "Topics": "a,b", "IggyAddress": "iggy.explicit:8090",
	}
	env := deployedEnv(t, newStack(t, tpl, params))
	got, err := config.LoadBytes(data, rel, lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	// Each given parameter reaches its option through its variable.
	feeds := parameterVariables(t, tpl)
	options := map[string]config.Option{}
	for _, o := range config.Options() {
		options[o.Env] = o
	}
	gotSettings := settings(got)
	for name := range params {
		if name == "SinkConfig" || name == "BucketName" {
			continue
		}
		v := feeds[name]
		o, ok := options[v]
		if v == "" || !ok {
			t.Errorf("parameter %s feeds no option (variable %q)", name, v)
			continue
		}
		key := strings.Replace(o.Key, "streams.", "streams[0].", 1)
		if s := gotSettings[key]; s.Source != config.SourceEnv || s.Var != v {
			t.Errorf("%s=%s: %s = %s comes from %s %s, want %s", name, params[name], key, s.Value, s.Source, s.Var, v)
		}
	}
	for key, want := range map[string]string{
		"plugin_config.prefix": `"explicit/prefix"`, "streams[0].consumer_group": `"explicit-group"`,
		"plugin_config.compression": `"gzip"`, "streams[0].stream": `"other"`, "streams[0].topics": `["a" "b"]`,
	} {
		if g := gotSettings[key].Value; g != want {
			t.Errorf("%s = %s, want %s", key, g, want)
		}
	}
	// The file's values the parameters replaced are reported, each once.
	var replaced []string
	for _, r := range got.Replaced {
		replaced = append(replaced, fmt.Sprintf("%s %s %s->%s", r.Key, r.Var, r.File, r.Env))
	}
	for _, want := range []string{
		`plugin_config.prefix SINK_PREFIX "iggy/raw"->"explicit/prefix"`,
		`streams[0].consumer_group SINK_CONSUMER_GROUP "s3_sink"->"explicit-group"`,
		`plugin_config.output_format SINK_OUTPUT_FORMAT "json_lines"->"json_array"`,
		`streams[0].stream SINK_STREAM "application_logs"->"other"`,
	} {
		if !slices.Contains(replaced, want) {
			t.Errorf("replaced %v lacks %s", replaced, want)
		}
	}
}

// TestDeployedConsumerGroup: the group is the file's when it names one (a
// migrated connector continues from its offsets), else upstream's default
// for the file's key; the ConsumerGroup parameter left empty changes neither.
func TestDeployedConsumerGroup(t *testing.T) {
	tpl := templateYAML(t)
	for _, tc := range []struct{ file, doc, want string }{
		{"upstream_seed.toml", "", "s3_sink"},
		{"no-group.toml", "key = \"orders\"\n[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\n[plugin_config]\nbucket = \"b\"\n", "iggy-connect-sink-orders"},
		{"no-key.toml", "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\n[plugin_config]\nbucket = \"b\"\n", "iggy-connect-sink-s3"},
	} {
		data := []byte(tc.doc)
		if tc.doc == "" {
			data = readRepoFile(t, "internal/config/testdata/"+tc.file)
		}
		env := deployedEnv(t, newStack(t, tpl, map[string]string{"SinkConfig": tc.file, "BucketName": "my-data-lake"}))
		cfg, err := config.LoadBytes(data, tc.file, lookup(env))
		if err != nil {
			t.Fatal(err)
		}
		if g := cfg.Streams[0].ConsumerGroup; g != tc.want {
			t.Errorf("%s: consumer group %q, want %q", tc.file, g, tc.want)
		}
	}
}

// parameterVariables maps each template parameter to the function variable
// it feeds (directly or through Fn::If).
func parameterVariables(t *testing.T, tpl map[string]any) map[string]string {
	t.Helper()
	fn := mapAt(t, mapAt(t, tpl, "Resources"), "SinkFunction")
	vars := mapAt(t, mapAt(t, mapAt(t, fn, "Properties"), "Environment"), "Variables")
	out := map[string]string{}
	for name, v := range vars {
		if ref := refOf(v); ref != "" {
			out[ref] = name
		}
	}
	return out
}

// TestDeployRules: a deploy without a configuration file must name the
// streams and the Iggy server (the template's Rules refuse it before any
// resource is made); with a file, every one of them may stay empty.
func TestDeployRules(t *testing.T) {
	tpl := templateYAML(t)
	for _, tc := range []struct {
		params map[string]string
		want   []string // the assertions that fail, by a word of their description
	}{
		{map[string]string{"BucketName": "bkt"}, []string{"Stream and Topics", "IggyAddress"}},
		{map[string]string{"BucketName": "bkt", "Stream": "s", "Topics": "t"}, []string{"IggyAddress"}},
		{map[string]string{"BucketName": "bkt", "Stream": "s", "IggyAddress": "iggy:8090"}, []string{"Stream and Topics"}},
		{map[string]string{"BucketName": "bkt", "Stream": "s", "Topics": "t", "IggyCredentialsSecret": "prod/iggy"}, nil},
		{requiredParams, nil},
		{map[string]string{"BucketName": "bkt", "SinkConfig": "examples/minio.toml"}, nil},
	} {
		s := newStack(t, tpl, tc.params)
		var failed []string
		for name, r := range mapAt(t, tpl, "Rules") {
			rule := r.(map[string]any)
			if c, ok := rule["RuleCondition"]; ok && !s.eval(c).(bool) {
				continue
			}
			for _, a := range rule["Assertions"].([]any) {
				a := a.(map[string]any)
				if !s.eval(a["Assert"]).(bool) {
					failed = append(failed, name+": "+a["AssertDescription"].(string))
				}
			}
		}
		if len(failed) != len(tc.want) {
			t.Errorf("%v: failed %v, want %v", tc.params, failed, tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(failed[i], w) {
				t.Errorf("%v: failed %v, want %v", tc.params, failed, tc.want)
			}
		}
	}
}

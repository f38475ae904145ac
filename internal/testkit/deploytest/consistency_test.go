package deploytest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/aws/aws-lambda-go/events"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
)

// TestLagAlarmMatchesEMF checks that the lag alarm watches a metric WriteEMF
// really emits: same namespace, metric name and exact dimension set (CloudWatch
// matches dimension sets exactly), with the function's name as the value.
func TestLagAlarmMatchesEMF(t *testing.T) {
	s := newStack(t, templateYAML(t), requiredParams)
	alarm := s.resource("LagAlarm", "AWS::CloudWatch::Alarm")
	fn := sinkFunction(t, s)
	env := functionEnv(t, s)

	namespace, _ := alarm["Namespace"].(string)
	if env["SINK_METRICS_NAMESPACE"] != namespace {
		t.Fatalf("the function writes metrics to %q but the alarm reads %q", env["SINK_METRICS_NAMESPACE"], namespace)
	}
	// Lambda's AWS_LAMBDA_FUNCTION_NAME, which cmd/lambda uses as the Function
	// dimension, is the FunctionName; Ref of a function is its name too.
	functionName, _ := fn["FunctionName"].(string)
	dims := map[string]string{}
	for _, d := range alarm["Dimensions"].([]any) {
		dm := d.(map[string]any)
		value, _ := dm["Value"].(string)
		if value == "Ref(SinkFunction)" {
			value = functionName
		}
		dims[dm["Name"].(string)] = value
	}

	var out bytes.Buffer
	run := metrics.Run{Function: functionName, Duration: time.Second, Partitions: []metrics.Partition{
		{Stream: "orders", Topic: "created", Partition: 1, Lag: 7},
		{Stream: "orders", Topic: "created", Partition: 2, Lag: 900},
	}}
	if err := metrics.WriteEMF(&out, namespace, time.Now(), run); err != nil {
		t.Fatal(err)
	}
	var matches []float64
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		var meta struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal(sc.Bytes(), &meta); err != nil {
			t.Fatal(err)
		}
		for _, d := range meta.AWS.CloudWatchMetrics {
			if d.Namespace != namespace || !slices.ContainsFunc(d.Metrics, func(m struct{ Name string }) bool { return m.Name == alarm["MetricName"] }) {
				continue
			}
			for _, set := range d.Dimensions {
				if !sameDimensionSet(set, dims, line) {
					continue
				}
				matches = append(matches, line[alarm["MetricName"].(string)].(float64))
			}
		}
	}
	if len(matches) == 0 {
		t.Fatalf("WriteEMF emits no %v in namespace %q with exactly the dimensions %v:\n%s", alarm["MetricName"], namespace, dims, out.String())
	}
	if got := slices.Max(matches); got != 900 {
		t.Errorf("the alarm's Maximum would see %v, want the largest partition lag 900", got)
	}
}

func sameDimensionSet(set []string, want map[string]string, line map[string]any) bool {
	if len(set) != len(want) {
		return false
	}
	for _, name := range set {
		if v, ok := want[name]; !ok || line[name] != v {
			return false
		}
	}
	return true
}

// TestTemplateEnvironmentIsConfig checks the template's variables against the
// config loader: every SINK_/IGGY_ variable is an option, every parameter that
// feeds one defaults to empty (unset: the file's value, else the code's
// default, holds) but for the stack's own values, which default to the code's
// default, and the resulting environment loads.
func TestTemplateEnvironmentIsConfig(t *testing.T) {
	tpl := templateYAML(t)
	options := map[string]config.Option{}
	key := ""
	for _, o := range config.Options() {
		if o.Env != "" {
			options[o.Env] = o
		}
		if o.Key == "key" {
			key = o.Default
		}
	}

	fnProps := tpl["Resources"].(map[string]any)["SinkFunction"].(map[string]any)["Properties"].(map[string]any)
	vars := fnProps["Environment"].(map[string]any)["Variables"].(map[string]any)
	params := mapAt(t, tpl, "Parameters")
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasPrefix(name, "AWS_") || name == "SINK_CONFIG" || name == ops.StackGrantsVar {
			continue // the SDK's own variables; the configuration file's location; the role's grants
		}
		opt, ok := options[name]
		if !ok {
			t.Errorf("template variable %s is not a config option", name)
			continue
		}
		ref := refOf(vars[name])
		decl, isParam := params[ref].(map[string]any)
		if !isParam {
			continue
		}
		def, hasDefault := decl["Default"]
		want := ""
		if slices.Contains(stackOwned, opt.Key) {
			want = strings.ReplaceAll(opt.Default, "<key>", key)
		}
		if hasDefault && scalarString(def) != want {
			t.Errorf("parameter %s defaults to %q, want %q: %s (%s) is the file's, else %q in the code, unless the deployment sets it", ref, scalarString(def), want, name, opt.Key, opt.Default)
		}
	}

	for _, sc := range deployScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			env := deployedEnv(t, newStack(t, tpl, sc.params))
			cfg, err := config.Load("", lookup(env))
			if err != nil {
				t.Fatalf("the deployed environment does not load: %v", err)
			}
			if cfg.Plugin.Bucket != sc.params["BucketName"] || cfg.Plugin.Region != testRegion || cfg.Iggy.Address != sc.params["IggyAddress"] {
				t.Errorf("loaded bucket %q region %q address %q", cfg.Plugin.Bucket, cfg.Plugin.Region, cfg.Iggy.Address)
			}
			if len(cfg.Streams) != 1 || cfg.Streams[0].Stream != "orders" || !slices.Equal(cfg.Streams[0].Topics, []string{"created", "cancelled"}) {
				t.Errorf("loaded streams %+v", cfg.Streams)
			}
			if cfg.Plugin.StateTable != "Ref(StateTable)" {
				t.Errorf("state table %q does not come from SINK_STATE_TABLE", cfg.Plugin.StateTable)
			}
			if cfg.Plugin.PathStyle != nil {
				t.Errorf("the empty SINK_PATH_STYLE set path_style to %v; on AWS it must stay automatic", *cfg.Plugin.PathStyle)
			}
		})
	}
}

// refOf returns the parameter a variable's value refers to, directly or through Fn::If.
func refOf(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if args, ok := m["Fn::If"].([]any); ok && len(args) == 3 {
		return refOf(args[1])
	}
	return ""
}

// TestEnvLocalJSON checks the `sam local invoke -n env.local.json` overrides.
func TestEnvLocalJSON(t *testing.T) {
	var file map[string]map[string]string
	if err := json.Unmarshal(readRepoFile(t, "env.local.json"), &file); err != nil {
		t.Fatalf("env.local.json: %v", err)
	}
	if len(file) != 1 || file["SinkFunction"] == nil {
		t.Fatalf("env.local.json must hold one object keyed by the function's logical id SinkFunction, has %v", file)
	}
	local := file["SinkFunction"]
	s := newStack(t, templateYAML(t), requiredParams)
	declared := functionEnv(t, s)
	for k := range local {
		// The SAM CLI silently drops overrides of variables the template does not declare.
		if _, ok := declared[k]; !ok {
			t.Errorf("env.local.json sets %s, which template.yaml does not declare: sam local would ignore it", k)
		}
	}
	wantHosts := map[string]string{
		"AWS_ENDPOINT_URL_S3":       "host.docker.internal:9000",
		"AWS_ENDPOINT_URL_DYNAMODB": "host.docker.internal:8000",
	}
	for k, host := range wantHosts {
		u, err := url.Parse(local[k])
		if err != nil || u.Scheme != "http" || u.Host != host {
			t.Errorf("%s = %q, want http://%s", k, local[k], host)
		}
	}
	if local["IGGY_ADDRESS"] != "host.docker.internal:8090" {
		t.Errorf("IGGY_ADDRESS = %q, want host.docker.internal:8090", local["IGGY_ADDRESS"])
	}

	env := deployedEnv(t, s)
	for k, v := range local {
		env[k] = v
	}
	cfg, err := config.Load("", lookup(env))
	if err != nil {
		t.Fatalf("the local environment does not load: %v", err)
	}
	if cfg.Plugin.PathStyle == nil || !*cfg.Plugin.PathStyle {
		t.Errorf("MinIO needs path-style requests; SINK_PATH_STYLE did not turn them on")
	}
	if cfg.Plugin.StateTable != local["SINK_STATE_TABLE"] || cfg.Plugin.Bucket != local["SINK_BUCKET"] {
		t.Errorf("loaded table %q bucket %q", cfg.Plugin.StateTable, cfg.Plugin.Bucket)
	}
}

// TestScheduleEvent checks events/schedule.json is the envelope EventBridge
// sends for a schedule rule without Input.
func TestScheduleEvent(t *testing.T) {
	dec := json.NewDecoder(bytes.NewReader(readRepoFile(t, "events/schedule.json")))
	dec.DisallowUnknownFields()
	var ev events.EventBridgeEvent
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("events/schedule.json is not an EventBridge event: %v", err)
	}
	if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || ev.Version != "0" {
		t.Errorf("detail-type %q source %q version %q", ev.DetailType, ev.Source, ev.Version)
	}
	if ev.Time.IsZero() || ev.ID == "" || ev.AccountID == "" || ev.Region == "" {
		t.Errorf("time, id, account or region missing: %+v", ev)
	}
	if len(ev.Resources) != 1 || !regexp.MustCompile(`^arn:aws:events:[a-z0-9-]+:\d{12}:rule/.+`).MatchString(ev.Resources[0]) {
		t.Errorf("resources = %v, want the rule's ARN", ev.Resources)
	}
	if string(ev.Detail) != "{}" {
		t.Errorf("detail = %s, want {}", ev.Detail)
	}
}

// TestSamconfig checks what `sam deploy` reads: the guided defaults and a dev
// environment whose overrides name real parameters with acceptable values.
func TestSamconfig(t *testing.T) {
	var cfg map[string]any
	if _, err := toml.Decode(string(readRepoFile(t, "samconfig.toml")), &cfg); err != nil {
		t.Fatalf("samconfig.toml: %v", err)
	}
	if cfg["version"] != 0.1 {
		t.Errorf("version = %v, want 0.1", cfg["version"])
	}
	section := func(env, cmd string) map[string]any {
		t.Helper()
		e, _ := cfg[env].(map[string]any)
		c, _ := e[cmd].(map[string]any)
		p, _ := c["parameters"].(map[string]any)
		if p == nil {
			t.Fatalf("samconfig.toml has no [%s.%s.parameters]", env, cmd)
		}
		return p
	}
	if section("default", "build")["cached"] != true {
		t.Errorf("[default.build.parameters] cached is not true")
	}
	for _, env := range []string{"default", "dev"} {
		deploy := section(env, "deploy")
		if s, _ := deploy["stack_name"].(string); s == "" || len(s) > 64 {
			t.Errorf("[%s] stack_name %q: it names the function too, so 1..64 characters", env, s)
		}
		if deploy["resolve_s3"] != true {
			t.Errorf("[%s] resolve_s3 is not true", env)
		}
		if caps, _ := deploy["capabilities"].(string); !strings.Contains(caps, "CAPABILITY_IAM") {
			t.Errorf("[%s] capabilities %q lack CAPABILITY_IAM (the stack creates a role)", env, caps)
		}
		if _, ok := deploy["confirm_changeset"].(bool); !ok {
			t.Errorf("[%s] confirm_changeset is not set", env)
		}
		if r, _ := deploy["region"].(string); r == "" {
			t.Errorf("[%s] region is not set", env)
		}
	}
	if section("default", "deploy")["confirm_changeset"] != true {
		t.Errorf("the default environment must confirm change sets")
	}

	overrides := map[string]string{}
	list, _ := section("dev", "deploy")["parameter_overrides"].([]any)
	if len(list) == 0 {
		t.Fatalf("[dev.deploy.parameters] has no parameter_overrides list")
	}
	for _, it := range list {
		k, v, ok := strings.Cut(it.(string), "=")
		if !ok {
			t.Fatalf("parameter override %q is not Key=Value", it)
		}
		overrides[k] = v
	}
	// newStack fails on unknown names, missing required values and constraint violations.
	s := newStack(t, templateYAML(t), overrides)
	env := deployedEnv(t, s)
	if _, err := config.Load("", lookup(env)); err != nil {
		t.Errorf("the dev environment's variables do not load: %v", err)
	}
}

// TestLocalDocs checks docs/local.md against env.local.json and the script
// behind `make sam-local`: the servers it starts listen on the ports the
// function is pointed at, and the SAM invocations are the script's.
func TestLocalDocs(t *testing.T) {
	doc := string(readRepoFile(t, "docs/local.md"))
	script := string(readRepoFile(t, "scripts/sam-local.sh"))
	for _, want := range []string{
		"make sam-local",
		"sam local invoke SinkFunction -e events/schedule.json -n env.local.json",
		"sam local start-lambda", "aws lambda invoke --function-name SinkFunction",
		"--skip-pull-image", "--add-host host.docker.internal:host-gateway", "--invoke-image",
		"MINIO_ROOT_USER=minioadmin", "AWS_ACCESS_KEY_ID=minioadmin", "AWS_ENDPOINT_URL_STS",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/local.md does not mention %q", want)
		}
	}
	for _, want := range []string{
		"sam local invoke SinkFunction -e events/schedule.json", "sam local start-lambda",
		"aws lambda invoke --function-name SinkFunction", "--skip-pull-image",
		"--add-host host.docker.internal:host-gateway", "env.local.json", "AWS_ENDPOINT_URL_STS",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("scripts/sam-local.sh does not run %q, which docs/local.md shows", want)
		}
	}

	var file map[string]map[string]string
	if err := json.Unmarshal(readRepoFile(t, "env.local.json"), &file); err != nil {
		t.Fatal(err)
	}
	local := file["SinkFunction"]
	for k, re := range map[string]string{
		"AWS_ENDPOINT_URL_S3":       `minio server \S+ --address \$GW:(\d+)`,
		"AWS_ENDPOINT_URL_DYNAMODB": `moto_server -H \$GW -p (\d+)`,
		"IGGY_ADDRESS":              `testbroker -addr \$GW:(\d+)`,
	} {
		m := regexp.MustCompile(re).FindStringSubmatch(doc)
		if m == nil {
			t.Errorf("docs/local.md starts no server matching %s", re)
			continue
		}
		if _, port, _ := strings.Cut(strings.TrimPrefix(local[k], "http://"), ":"); port != m[1] {
			t.Errorf("%s = %s, but docs/local.md starts its server on port %s", k, local[k], m[1])
		}
	}
	if local["SINK_INCLUDE_HEADERS"] != "true" {
		t.Errorf("env.local.json does not turn headers on; docs/local.md shows them in the records")
	}
}

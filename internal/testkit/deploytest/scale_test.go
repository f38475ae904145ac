package deploytest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
)

// emitted is one metric as the function writes it: namespace, name and
// the exact dimension set with its values (CloudWatch matches dimension
// sets exactly, so a widget naming a subset or a superset shows nothing).
type emitted struct {
	namespace, name string
	dims            map[string]string
}

func (e emitted) dimNames() string {
	names := make([]string, 0, len(e.dims))
	for k := range e.dims {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// emittedMetrics runs every EMF writer the function uses (a run with two
// partitions, a tick's fan-out line, an audit) and returns what they emit.
func emittedMetrics(t *testing.T, namespace, function string) []emitted {
	t.Helper()
	var out bytes.Buffer
	now := time.Now()
	run := metrics.Run{Function: function, Duration: time.Second, Partitions: []metrics.Partition{
		{Stream: "orders", Topic: "created", Partition: 0, Objects: 1, Lag: 3},
		{Stream: "orders", Topic: "created", Partition: 1, Objects: 2, Lag: 5},
	}}
	for _, err := range []error{
		metrics.WriteEMF(&out, namespace, now, run),
		metrics.WriteFanOut(&out, namespace, now, metrics.FanOut{Function: function, Workers: 3, Started: 2, Settle: time.Second}),
		metrics.WriteAudit(&out, namespace, now, metrics.Audit{Function: function, Partitions: 2, Objects: 3}),
		metrics.WriteTables(&out, namespace, now, metrics.Tables{Function: function, Commits: 1, Files: 2, Latency: time.Second}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var all []emitted
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var line map[string]any
		var meta struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(sc.Bytes(), &meta); err != nil {
			t.Fatal(err)
		}
		for _, d := range meta.AWS.CloudWatchMetrics {
			for _, set := range d.Dimensions {
				for _, m := range d.Metrics {
					e := emitted{namespace: d.Namespace, name: m.Name, dims: map[string]string{}}
					for _, name := range set {
						e.dims[name], _ = line[name].(string)
					}
					all = append(all, e)
				}
			}
		}
	}
	return all
}

// lambdaMetrics are the AWS/Lambda metrics a widget may show, all with the
// single dimension FunctionName.
var lambdaMetrics = []string{"Invocations", "Errors", "Throttles", "ConcurrentExecutions", "Duration"}

// search matches the dashboard's SEARCH expressions:
// SEARCH('{"ns",Dim,...} MetricName="X" Function="fn"', 'Stat', 60).
var search = regexp.MustCompile(`^SEARCH\('\{"([^"]+)",([A-Za-z,]+)\} MetricName="([A-Za-z]+)" Function="([^"]+)"', '([A-Za-z0-9.]+)', (\d+)\)$`)

// widgetMetric is one metric a widget shows, parsed.
type widgetMetric struct {
	namespace, name string
	dims            map[string]string
	search          bool // a SEARCH over every value of the non-Function dimensions
	stat            string
}

func parseWidgetMetric(t *testing.T, title string, entry []any) widgetMetric {
	t.Helper()
	if len(entry) == 1 {
		opts, _ := entry[0].(map[string]any)
		expr, _ := opts["expression"].(string)
		m := search.FindStringSubmatch(expr)
		if m == nil {
			t.Fatalf("widget %q: expression %q is not a SEARCH of one metric of the function", title, expr)
		}
		wm := widgetMetric{namespace: m[1], name: m[3], dims: map[string]string{}, search: true, stat: m[5]}
		for _, d := range strings.Split(m[2], ",") {
			wm.dims[d] = "*"
		}
		if _, ok := wm.dims["Function"]; !ok {
			t.Fatalf("widget %q: SEARCH %q does not name the Function dimension", title, expr)
		}
		wm.dims["Function"] = m[4]
		return wm
	}
	wm := widgetMetric{dims: map[string]string{}}
	rest := entry
	if opts, ok := rest[len(rest)-1].(map[string]any); ok {
		wm.stat, _ = opts["stat"].(string)
		rest = rest[:len(rest)-1]
	}
	if len(rest) < 2 || len(rest)%2 != 0 {
		t.Fatalf("widget %q: metric %v is not [namespace, name, dim, value, ...]", title, entry)
	}
	for i, v := range rest {
		s, ok := v.(string)
		if !ok || s == "." || s == "" {
			t.Fatalf("widget %q: metric %v: item %d is %v (shorthand is not allowed: every item spelt out)", title, entry, i, v)
		}
	}
	wm.namespace, wm.name = rest[0].(string), rest[1].(string)
	for i := 2; i < len(rest); i += 2 {
		wm.dims[rest[i].(string)] = rest[i+1].(string)
	}
	return wm
}

// matches reports whether the function emits wm: same namespace, name and
// dimension set; every fixed dimension value equal.
func (wm widgetMetric) matches(e emitted) bool {
	if wm.namespace != e.namespace || wm.name != e.name || len(wm.dims) != len(e.dims) {
		return false
	}
	for k, v := range wm.dims {
		ev, ok := e.dims[k]
		if !ok || (v != "*" && k == "Function" && v != ev) {
			return false
		}
	}
	return true
}

// TestDashboardMatchesEMF reads the dashboard the template deploys and
// checks every metric of every widget against what the function emits
// (namespace, name, exact dimension set, the function's name as Function),
// with valid statistics; and that the widgets the issue asks for are there.
func TestDashboardMatchesEMF(t *testing.T) {
	s := newStack(t, templateYAML(t), requiredParams)
	dash := s.resource("SinkDashboard", "AWS::CloudWatch::Dashboard")
	fn := sinkFunction(t, s)
	functionName, _ := fn["FunctionName"].(string)
	namespace := functionEnv(t, s)["SINK_METRICS_NAMESPACE"]
	if dash["DashboardName"] != testStackName {
		t.Errorf("DashboardName = %v, want the stack's name", dash["DashboardName"])
	}
	bodyText, ok := dash["DashboardBody"].(string)
	if !ok {
		t.Fatalf("DashboardBody is %T, want a string", dash["DashboardBody"])
	}
	// Ref of the function is its name, which is what the metrics carry.
	bodyText = strings.ReplaceAll(bodyText, "Ref(SinkFunction)", functionName)
	var body struct {
		Widgets []struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal([]byte(bodyText), &body); err != nil {
		t.Fatalf("DashboardBody is not JSON: %v\n%s", err, bodyText)
	}
	emits := emittedMetrics(t, namespace, functionName)
	validStats := map[string]bool{"Sum": true, "Average": true, "Maximum": true, "Minimum": true, "SampleCount": true}
	shown := map[string]bool{}
	metricWidgets := 0
	for _, w := range body.Widgets {
		if w.Type == "text" || w.Type == "alarm" { // alarm widgets: dashboard_test.go
			continue
		}
		if w.Type != "metric" {
			t.Errorf("widget type %q: only metric, alarm and text widgets are expected", w.Type)
			continue
		}
		metricWidgets++
		title, _ := w.Properties["title"].(string)
		if title == "" || w.Properties["region"] != testRegion {
			t.Errorf("widget %q: region %v, want a title and the stack's region", title, w.Properties["region"])
		}
		entries, _ := w.Properties["metrics"].([]any)
		if len(entries) == 0 {
			t.Errorf("widget %q shows no metric", title)
		}
		for _, e := range entries {
			entry, _ := e.([]any)
			wm := parseWidgetMetric(t, title, entry)
			if !validStats[wm.stat] {
				t.Errorf("widget %q: %s has statistic %q", title, wm.name, wm.stat)
			}
			if wm.namespace == "AWS/Lambda" {
				if !slices.Contains(lambdaMetrics, wm.name) || len(wm.dims) != 1 || wm.dims["FunctionName"] != functionName {
					t.Errorf("widget %q: AWS/Lambda %s with dimensions %v; want one of %v for FunctionName=%s", title, wm.name, wm.dims, lambdaMetrics, functionName)
				}
				continue
			}
			if !slices.ContainsFunc(emits, wm.matches) {
				t.Errorf("widget %q shows %s/%s with dimensions %v, which the function does not emit", title, wm.namespace, wm.name, wm.dims)
				continue
			}
			kind := "function"
			if wm.search {
				kind = "partition"
			}
			shown[kind+":"+wm.name+":"+wm.stat] = true
		}
	}
	// What the issue asks the dashboard to show.
	for _, want := range []string{
		"partition:Lag:Maximum",
		"function:Objects:Sum", "function:Messages:Sum", "function:Bytes:Sum",
		"partition:Objects:Sum", "partition:Messages:Sum", "partition:Bytes:Sum",
		"function:GapMessages:Sum", "function:InvalidPayloads:Sum",
		"function:Duration:Average", "function:Failed:Sum",
		"function:WorkersStarted:Sum",
		"function:AuditOverlaps:Maximum", "function:AuditGaps:Maximum",
	} {
		if !shown[want] {
			t.Errorf("no widget shows %s", want)
		}
	}
	if metricWidgets < 8 {
		t.Errorf("%d metric widgets, want at least 8", metricWidgets)
	}
}

// TestDashboardCheckCatchesMistakes: the check above must fail on a widget
// that names a metric the function does not emit, or a wrong dimension set.
func TestDashboardCheckCatchesMistakes(t *testing.T) {
	emits := emittedMetrics(t, "IggyS3Sink", "fn")
	for name, entry := range map[string][]any{
		"misspelt metric":      {"IggyS3Sink", "WorkerStarted", "Function", "fn", map[string]any{"stat": "Sum"}},
		"missing dimension":    {"IggyS3Sink", "Objects", map[string]any{"stat": "Sum"}},
		"extra dimension":      {"IggyS3Sink", "Workers", "Function", "fn", "Stream", "orders", map[string]any{"stat": "Sum"}},
		"another function":     {"IggyS3Sink", "Lag", "Function", "other", map[string]any{"stat": "Maximum"}},
		"another namespace":    {"Other", "Lag", "Function", "fn", map[string]any{"stat": "Maximum"}},
		"search, partial dims": {map[string]any{"expression": `SEARCH('{"IggyS3Sink",Function,Partition} MetricName="Lag" Function="fn"', 'Maximum', 60)`}},
	} {
		wm := parseWidgetMetric(t, name, entry)
		if slices.ContainsFunc(emits, wm.matches) {
			t.Errorf("%s: %v matched an emitted metric", name, entry)
		}
	}
	ok := parseWidgetMetric(t, "ok", []any{map[string]any{"expression": `SEARCH('{"IggyS3Sink",Function,Stream,Topic,Partition} MetricName="Lag" Function="fn"', 'Maximum', 60)`}})
	if !slices.ContainsFunc(emits, ok.matches) {
		t.Errorf("the per-partition lag SEARCH did not match what WriteEMF emits")
	}
}

// TestAuditAlarmMatchesEMF: the audit alarm adds AuditOverlaps and
// AuditGaps as the function emits them, and fires on any violation.
func TestAuditAlarmMatchesEMF(t *testing.T) {
	s := newStack(t, templateYAML(t), requiredParams)
	alarm := s.resource("AuditAlarm", "AWS::CloudWatch::Alarm")
	functionName, _ := sinkFunction(t, s)["FunctionName"].(string)
	namespace := functionEnv(t, s)["SINK_METRICS_NAMESPACE"]
	emits := emittedMetrics(t, namespace, functionName)
	if fmt.Sprint(alarm["Threshold"]) != "0" || alarm["ComparisonOperator"] != "GreaterThanThreshold" || alarm["TreatMissingData"] != "ignore" {
		t.Errorf("AuditAlarm fires on %v %v (missing data: %v); want > 0, kept until the next audit", alarm["ComparisonOperator"], alarm["Threshold"], alarm["TreatMissingData"])
	}
	var expr string
	named := map[string]string{}
	for _, q := range alarm["Metrics"].([]any) {
		m := q.(map[string]any)
		if e, ok := m["Expression"].(string); ok {
			expr = e
			continue
		}
		ms := m["MetricStat"].(map[string]any)
		metric := ms["Metric"].(map[string]any)
		wm := widgetMetric{namespace: metric["Namespace"].(string), name: metric["MetricName"].(string), dims: map[string]string{}}
		for _, d := range metric["Dimensions"].([]any) {
			dm := d.(map[string]any)
			v := dm["Value"].(string)
			if v == "Ref(SinkFunction)" {
				v = functionName
			}
			wm.dims[dm["Name"].(string)] = v
		}
		if !slices.ContainsFunc(emits, wm.matches) {
			t.Errorf("AuditAlarm reads %s/%s %v, which the function does not emit", wm.namespace, wm.name, wm.dims)
		}
		named[m["Id"].(string)] = wm.name
	}
	if named["overlaps"] != metrics.MetricAuditOverlaps || named["gaps"] != metrics.MetricAuditGaps || expr != "overlaps + gaps" {
		t.Errorf("AuditAlarm computes %q over %v, want overlaps + gaps", expr, named)
	}
}

// TestScaleResources: the resources and grants behind MaxWorkers,
// AuditSchedule and CreateDashboard, for their defaults and with fan-out
// on, the audit off and no dashboard.
func TestScaleResources(t *testing.T) {
	tpl := templateYAML(t)
	functionARN := "arn:aws:lambda:us-east-1:123456789012:function:" + testStackName
	t.Run("defaults", func(t *testing.T) {
		s := newStack(t, tpl, requiredParams)
		env := functionEnv(t, s)
		if env["SINK_MAX_WORKERS"] != "" {
			t.Errorf("SINK_MAX_WORKERS = %q, want empty (the file's max_workers, else 1: no fan-out)", env["SINK_MAX_WORKERS"])
		}
		if got := granted(t, s)["lambda:InvokeFunction"]; got != nil {
			t.Errorf("MaxWorkers=1 grants lambda:InvokeFunction on %v; nothing invokes the function then", got)
		}
		rule := s.resource("AuditScheduleRule", "AWS::Events::Rule")
		targets, _ := rule["Targets"].([]any)
		if rule["ScheduleExpression"] != "rate(1 day)" || len(targets) != 1 {
			t.Fatalf("audit rule %v", rule)
		}
		target := targets[0].(map[string]any)
		if target["Arn"] != "GetAtt(SinkFunction.Arn)" || target["Input"] != `{"mode":"audit"}` {
			t.Errorf("audit target %v, want the function with {\"mode\":\"audit\"}", target)
		}
		perm := s.resource("AuditSchedulePermission", "AWS::Lambda::Permission")
		if perm["Principal"] != "events.amazonaws.com" || perm["SourceArn"] != "GetAtt(AuditScheduleRule.Arn)" || perm["FunctionName"] != "Ref(SinkFunction)" {
			t.Errorf("audit permission %v does not let only the audit rule invoke the function", perm)
		}
	})
	t.Run("fan-out on, audit off, no dashboard", func(t *testing.T) {
		params := map[string]string{"MaxWorkers": "8", "ReservedConcurrency": "8", "AuditSchedule": "", "CreateDashboard": "false", "WorkerRate": "25000"}
		for k, v := range requiredParams {
			params[k] = v
		}
		s := newStack(t, tpl, params)
		env := functionEnv(t, s)
		if env["SINK_MAX_WORKERS"] != "8" || env["SINK_WORKER_RATE"] != "25000" {
			t.Errorf("environment SINK_MAX_WORKERS=%q SINK_WORKER_RATE=%q", env["SINK_MAX_WORKERS"], env["SINK_WORKER_RATE"])
		}
		withFanOut, without := granted(t, s), granted(t, newStack(t, tpl, requiredParams))
		if got := withFanOut["lambda:InvokeFunction"]; !slices.Equal(got, []string{functionARN}) {
			t.Errorf("lambda:InvokeFunction granted on %v, want the function itself only (%s)", got, functionARN)
		}
		delete(withFanOut, "lambda:InvokeFunction")
		if fmt.Sprint(withFanOut) != fmt.Sprint(without) {
			t.Errorf("fan-out changes other grants:\n%v\nvs\n%v", withFanOut, without)
		}
		for _, id := range []string{"AuditScheduleRule", "AuditSchedulePermission", "AuditAlarm", "SinkDashboard"} {
			if _, ok := s.resources()[id]; ok {
				t.Errorf("%s exists with the audit off and CreateDashboard=false", id)
			}
		}
	})
}

// granted maps every action the role allows to its resources.
func granted(t *testing.T, s *stack) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, st := range statements(t, s) {
		for _, a := range st.actions {
			out[a] = append(out[a], st.resources...)
		}
	}
	return out
}

package deploytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/scripts/dashboard/picture"
)

// dashboardCases set both sides of every condition the dashboard body
// uses (HasAuditSchedule, Iceberg), and a lag threshold of its own.
func dashboardCases() []struct {
	name   string
	params map[string]string
} {
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range requiredParams {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	iceberg := map[string]string{"TableFormat": "iceberg", "IcebergCatalog": "glue", "OutputFormat": "parquet", "Compression": "none"}
	return []struct {
		name   string
		params map[string]string
	}{
		{"defaults", with(nil)},
		{"iceberg", with(iceberg)},
		{"audit off", with(map[string]string{"AuditSchedule": ""})},
		{"iceberg, audit off, lag threshold 2500", with(map[string]string{"TableFormat": "iceberg", "IcebergCatalog": "rest",
			"IcebergCatalogUri": "https://catalog.example/api", "OutputFormat": "parquet", "Compression": "none",
			"AuditSchedule": "", "LagAlarmThreshold": "2500"})},
	}
}

// dashWidget is one widget of the deployed body.
type dashWidget struct {
	Type                string
	X, Y, Width, Height int
	Properties          map[string]any
}

// deployedDashboard evaluates the dashboard's body as CloudFormation would
// and parses it, failing when it is not JSON.
func deployedDashboard(t *testing.T, s *stack) (string, []dashWidget) {
	t.Helper()
	dash := s.resource("SinkDashboard", "AWS::CloudWatch::Dashboard")
	body, ok := dash["DashboardBody"].(string)
	if !ok {
		t.Fatalf("DashboardBody is %T, want a string", dash["DashboardBody"])
	}
	var parsed struct{ Widgets []dashWidget }
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&parsed); err != nil {
		t.Fatalf("DashboardBody is not the JSON CloudWatch takes: %v\n%s", err, body)
	}
	return body, parsed.Widgets
}

// metricNames lists the metrics a widget shows (SEARCH ones included).
func metricNames(t *testing.T, w dashWidget) []string {
	t.Helper()
	var names []string
	entries, _ := w.Properties["metrics"].([]any)
	for _, e := range entries {
		entry, _ := e.([]any)
		title, _ := w.Properties["title"].(string)
		names = append(names, parseWidgetMetric(t, title, entry).name)
	}
	return names
}

// TestDashboardUnderEveryCondition deploys the dashboard for each
// combination of its conditions and checks what an operator would: the
// body is valid JSON, the widgets tile the 24-column grid without
// overlapping, the stack's alarms sit at the top, the lag graph draws the
// alarm's threshold, data lost to retention has a widget of its own, the
// Iceberg widget is there exactly with tables, and every metric is one
// the function emits.
func TestDashboardUnderEveryCondition(t *testing.T) {
	tpl := templateYAML(t)
	for _, tc := range dashboardCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, tpl, tc.params)
			_, widgets := deployedDashboard(t, s)
			checkGrid(t, widgets)
			checkAlarmWidget(t, s, widgets)
			checkLagThreshold(t, s, widgets)
			checkDataLost(t, widgets)

			functionName, _ := sinkFunction(t, s)["FunctionName"].(string)
			emits := emittedMetrics(t, functionEnv(t, s)["SINK_METRICS_NAMESPACE"], functionName)
			iceberg := false
			for _, w := range widgets {
				if w.Type != "metric" {
					continue
				}
				title, _ := w.Properties["title"].(string)
				entries, _ := w.Properties["metrics"].([]any)
				for _, e := range entries {
					entry, _ := e.([]any)
					for i, it := range entry {
						if str, ok := it.(string); ok {
							entry[i] = strings.ReplaceAll(str, "Ref(SinkFunction)", functionName)
						}
						if m, ok := it.(map[string]any); ok {
							if expr, ok := m["expression"].(string); ok {
								m["expression"] = strings.ReplaceAll(expr, "Ref(SinkFunction)", functionName)
							}
						}
					}
					wm := parseWidgetMetric(t, title, entry)
					iceberg = iceberg || strings.HasPrefix(wm.name, "Table")
					if wm.namespace != "AWS/Lambda" && !slices.ContainsFunc(emits, wm.matches) {
						t.Errorf("widget %q shows %s/%s %v, which the function does not emit", title, wm.namespace, wm.name, wm.dims)
					}
				}
			}
			if want := tc.params["TableFormat"] == "iceberg"; iceberg != want {
				t.Errorf("TableFormat=%q: an Iceberg widget is shown: %v, want %v", tc.params["TableFormat"], iceberg, want)
			}
		})
	}
}

// checkGrid: CloudWatch's grid is 24 columns wide; overlapping widgets
// would hide each other.
func checkGrid(t *testing.T, widgets []dashWidget) {
	t.Helper()
	for i, a := range widgets {
		if a.X < 0 || a.Y < 0 || a.Width < 1 || a.Height < 1 || a.X+a.Width > 24 {
			t.Errorf("widget %d (%v) at x=%d y=%d width=%d height=%d is outside the 24-column grid", i, a.Properties["title"], a.X, a.Y, a.Width, a.Height)
		}
		for j, b := range widgets[:i] {
			if a.X < b.X+b.Width && b.X < a.X+a.Width && a.Y < b.Y+b.Height && b.Y < a.Y+a.Height {
				t.Errorf("widgets %d (%v) and %d (%v) overlap", j, b.Properties["title"], i, a.Properties["title"])
			}
		}
	}
}

// checkAlarmWidget: one alarm widget in the top row shows the state of
// every alarm the stack has, and of nothing else.
func checkAlarmWidget(t *testing.T, s *stack, widgets []dashWidget) {
	t.Helper()
	var want []any
	for _, id := range resourcesOfType(s, "AWS::CloudWatch::Alarm") {
		want = append(want, "GetAtt("+id+".Arn)")
	}
	var alarmWidgets []dashWidget
	for _, w := range widgets {
		if w.Type == "alarm" {
			alarmWidgets = append(alarmWidgets, w)
		}
	}
	if len(alarmWidgets) != 1 {
		t.Fatalf("%d alarm widgets, want one", len(alarmWidgets))
	}
	w := alarmWidgets[0]
	if w.Y != 0 {
		t.Errorf("the alarm widget is at y=%d, want the top row", w.Y)
	}
	got, _ := w.Properties["alarms"].([]any)
	slices.SortFunc(got, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the alarm widget shows %v, want every alarm of the stack %v", got, want)
	}
	if title, _ := w.Properties["title"].(string); title == "" {
		t.Errorf("the alarm widget has no title")
	}
}

// checkLagThreshold: the lag graph draws LagAlarm's threshold.
func checkLagThreshold(t *testing.T, s *stack, widgets []dashWidget) {
	t.Helper()
	threshold := fmt.Sprint(s.resource("LagAlarm", "AWS::CloudWatch::Alarm")["Threshold"])
	for _, w := range widgets {
		if w.Type != "metric" || !slices.Contains(metricNames(t, w), "Lag") {
			continue
		}
		ann, _ := w.Properties["annotations"].(map[string]any)
		hs, _ := ann["horizontal"].([]any)
		if len(hs) != 1 {
			t.Fatalf("the lag widget has horizontal annotations %v, want the alarm's threshold", hs)
		}
		h, _ := hs[0].(map[string]any)
		if v, ok := h["value"].(float64); !ok || fmt.Sprint(v) != threshold {
			t.Errorf("the lag widget draws a line at %v (%T), want LagAlarm's threshold %s as a number", h["value"], h["value"], threshold)
		}
		if label, _ := h["label"].(string); !strings.Contains(label, "LagAlarm") {
			t.Errorf("the threshold line is labelled %q; say it is LagAlarm's", label)
		}
		return
	}
	t.Errorf("no widget shows Lag")
}

// checkDataLost: GapMessages (offsets in gap markers: messages Iggy deleted
// before they were archived) has a widget of its own, apart from routine
// retries and invalid payloads.
func checkDataLost(t *testing.T, widgets []dashWidget) {
	t.Helper()
	var holders []string
	for _, w := range widgets {
		if w.Type != "metric" {
			continue
		}
		names := metricNames(t, w)
		if !slices.Contains(names, "GapMessages") {
			continue
		}
		title, _ := w.Properties["title"].(string)
		holders = append(holders, title)
		for _, n := range names {
			if n != "GapMessages" {
				t.Errorf("widget %q shows %s beside GapMessages; lost data needs a widget of its own", title, n)
			}
		}
		if len(names) < 2 {
			t.Errorf("widget %q shows GapMessages %v; want the function's total and each partition's", title, names)
		}
	}
	if len(holders) != 1 {
		t.Errorf("GapMessages is shown by %v, want exactly one widget", holders)
	}
}

// TestDashboardPictureEvaluatesAsCloudFormation: the renderer's own
// evaluation of the body (it cannot use this package's test evaluator)
// gives exactly the body CloudFormation would deploy, for every case.
func TestDashboardPictureEvaluatesAsCloudFormation(t *testing.T) {
	raw := readRepoFile(t, "template.yaml")
	tpl := parseTemplateYAML(t, raw)
	resources := mapAt(t, tpl, "Resources")
	for _, tc := range dashboardCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newStack(t, tpl, tc.params)
			want, _ := deployedDashboard(t, s)
			got, err := picture.Body(raw, picture.Options{Params: tc.params, Ref: func(name string) (string, bool) {
				if res, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
					return "GetAtt(" + res + "." + attr + ")", true
				}
				if strings.HasPrefix(name, "AWS::") {
					v, ok := s.ref(name).(string)
					return v, ok
				}
				if _, ok := resources[name]; ok {
					return "Ref(" + name + ")", true
				}
				return "", false
			}})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("the picture's body differs from the deployed one:\npicture:  %s\ndeployed: %s", got, want)
			}
		})
	}
}

// TestDashboardPictureIsCurrent redraws docs/dashboard.svg from
// template.yaml and compares it with the committed file, which
// docs/operations.md shows.
func TestDashboardPictureIsCurrent(t *testing.T) {
	raw := readRepoFile(t, "template.yaml")
	got, err := picture.RenderTemplate(raw, picture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	committed := readRepoFile(t, "docs/dashboard.svg")
	if !bytes.Equal(got, committed) {
		t.Errorf("docs/dashboard.svg is not the dashboard template.yaml deploys: run `go run ./scripts/dashboard` at the repository root and commit docs/dashboard.svg")
	}
	// It shows every widget of the default stack, under its title.
	_, widgets := deployedDashboard(t, newStack(t, parseTemplateYAML(t, raw), requiredParams))
	for _, w := range widgets {
		title, _ := w.Properties["title"].(string)
		if w.Type == "text" {
			continue
		}
		if !bytes.Contains(got, []byte("<title>"+w.Type+": "+xmlEscape(title)+"</title>")) {
			t.Errorf("the picture has no %s widget titled %q", w.Type, title)
		}
	}
	if doc := string(readRepoFile(t, "docs/operations.md")); !strings.Contains(doc, "](dashboard.svg)") {
		t.Errorf("docs/operations.md does not show dashboard.svg")
	}
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// TestDashboardUrlOutput: the DashboardUrl output opens the dashboard in
// the console of the stack's partition and Region, and exists only with
// the dashboard.
func TestDashboardUrlOutput(t *testing.T) {
	tpl := templateYAML(t)
	out, _ := mapAt(t, tpl, "Outputs")["DashboardUrl"].(map[string]any)
	if out == nil {
		t.Fatal("template.yaml has no DashboardUrl output")
	}
	if out["Condition"] != "WithDashboard" {
		t.Errorf("DashboardUrl has condition %v, want WithDashboard (no URL without a dashboard)", out["Condition"])
	}
	for _, tc := range []struct{ partition, host string }{
		{"aws", testRegion + ".console.aws.amazon.com"},
		{"aws-cn", testRegion + ".console.amazonaws.cn"},
		{"aws-us-gov", testRegion + ".console.amazonaws-us-gov.com"},
	} {
		t.Run(tc.partition, func(t *testing.T) {
			s := newStack(t, inPartition(tpl, tc.partition).(map[string]any), requiredParams)
			v, _ := s.eval(out["Value"]).(string)
			u, err := url.Parse(v)
			if err != nil {
				t.Fatalf("DashboardUrl %q: %v", v, err)
			}
			if u.Scheme != "https" || u.Host != tc.host || u.Path != "/cloudwatch/home" || u.Query().Get("region") != testRegion {
				t.Errorf("DashboardUrl = %s, want https://%s/cloudwatch/home?region=%s", v, tc.host, testRegion)
			}
			if u.Fragment != "dashboards:name=Ref(SinkDashboard)" {
				t.Errorf("DashboardUrl fragment %q, want dashboards:name=<the dashboard's name>", u.Fragment)
			}
		})
	}
}

// inPartition returns a copy of v in which Ref AWS::Partition is p (the
// test evaluator's own is always aws).
func inPartition(v any, p string) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 && x["Ref"] == "AWS::Partition" {
			return p
		}
		out := map[string]any{}
		for k, it := range x {
			out[k] = inPartition(it, p)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = inPartition(it, p)
		}
		return out
	case string:
		return strings.ReplaceAll(x, "${AWS::Partition}", p)
	}
	return v
}

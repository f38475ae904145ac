package picture

import (
	"strings"
	"testing"
)

const tinyTemplate = `
Parameters:
  Namespace: {Type: String, Default: Sink}
  Threshold: {Type: Number, Default: 100}
  Tables: {Type: String, Default: none}
  Audit: {Type: String, Default: 'rate(1 day)'}
  Required: {Type: String}
Conditions:
  WithTables: !Equals [!Ref Tables, iceberg]
  HasAudit: !Not [!Equals [!Ref Audit, '']]
  Both: !And [!Condition WithTables, !Condition HasAudit]
Resources:
  Fn: {Type: AWS::Serverless::Function}
  Alarm: {Type: AWS::CloudWatch::Alarm}
  SinkDashboard:
    Type: AWS::CloudWatch::Dashboard
    Properties:
      DashboardBody: BODY
`

func TestBody(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		params     map[string]string
		want, err  string
	}{
		{name: "sub of parameters, pseudo parameters, resources and attributes",
			body: `!Sub '${Namespace} ${Threshold} ${AWS::Region} ${Fn} ${Alarm.Arn} ${!Literal}'`,
			want: "Sink 100 <region> <Fn> <Alarm.Arn> ${Literal}"},
		{name: "sub with variables", body: `!Sub ['${A}-${Namespace}', {A: !Ref Threshold}]`, want: "100-Sink"},
		{name: "join of conditional pieces, defaults",
			body: `!Join ['', ['[', !If [HasAudit, 'audit', ''], !If [WithTables, !Sub ',${Namespace}', ''], ']']]`,
			want: "[audit]"},
		{name: "join of conditional pieces, both", params: map[string]string{"Tables": "iceberg"},
			body: `!Join ['', ['[', !If [Both, 'both', 'one'], !If [WithTables, !Sub ',${Namespace}', ''], ']']]`,
			want: "[both,Sink]"},
		{name: "an override", params: map[string]string{"Audit": ""},
			body: `!If [HasAudit, 'audit', 'none']`, want: "none"},
		{name: "long forms", body: `{"Fn::Join": ["-", [{"Ref": "Namespace"}, {"Fn::GetAtt": ["Alarm", "Arn"]}]]}`,
			want: "Sink-<Alarm.Arn>"},
		{name: "a parameter without default", body: `!Sub '${Required}'`, err: "parameter Required has no default: give it a value (-param Required=...)"},
		{name: "an unknown parameter", params: map[string]string{"Nope": "1"}, body: `x`, err: "parameter Nope: the template has no such parameter"},
		{name: "an intrinsic it does not evaluate", body: `!Select [0, [a]]`, err: "intrinsic Fn::Select: the dashboard picture evaluates only"},
		{name: "an unknown condition", body: `!If [Missing, a, b]`, err: "unknown condition Missing"},
		{name: "not a string", body: `[a]`, err: "evaluates to []interface {}, want a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := strings.Replace(tinyTemplate, "BODY", tc.body, 1)
			got, err := Body([]byte(tpl), Options{Params: tc.params})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("body %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	body := `{"widgets": [
	  {"type": "alarm", "x": 0, "y": 0, "width": 24, "height": 3, "properties": {"title": "Alarms", "alarms": ["<LagAlarm.Arn>", "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:stack-ErrorsAlarm-X"]}},
	  {"type": "metric", "x": 0, "y": 3, "width": 12, "height": 6, "properties": {"title": "Lag <&>", "period": 3600,
	    "annotations": {"horizontal": [{"label": "threshold", "value": 2500}]},
	    "metrics": [
	      [{"expression": "SEARCH('{\"NS\",Function,Partition} MetricName=\"Lag\" Function=\"fn\"', 'Maximum', 60)", "id": "l"}],
	      ["NS", "Lag", "Function", "fn", {"stat": "Maximum"}],
	      ["NS", "Bytes", "Function", "fn", {"stat": "Sum", "label": "bytes", "yAxis": "right"}]
	    ]}}]}`
	svg, err := Render(body, "heading")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		">LagAlarm<", ">stack-ErrorsAlarm-X<", // alarm tiles, named from placeholder and ARN
		"<title>metric: Lag &lt;&amp;&gt;</title>", // escaped
		">Lag of each partition (Maximum)<", ">Lag (Maximum)<", ">bytes (right axis)<", ">threshold: 2500<",
		">timeSeries, period 1 h<",
	} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the picture lacks %q:\n%s", want, svg)
		}
	}
	again, _ := Render(body, "heading")
	if string(again) != string(svg) {
		t.Errorf("two renderings of one body differ")
	}

	for name, bad := range map[string]string{
		"not JSON":         `{"widgets": [`,
		"outside the grid": `{"widgets": [{"type": "text", "x": 20, "y": 0, "width": 6, "height": 2, "properties": {"markdown": "x"}}]}`,
	} {
		if _, err := Render(bad, ""); err == nil {
			t.Errorf("%s: rendered without an error", name)
		}
	}
}

package deploytest

import (
	"slices"
	"testing"
)

// TestSinkConfigParameter checks, on template.yaml itself, what each kind
// of SinkConfig value gives the function: the variable, and exactly the
// one read it needs (none for a bundled file).
func TestSinkConfigParameter(t *testing.T) {
	for _, tc := range []struct {
		value             string
		object, parameter string
	}{
		{"", "", ""},
		{"examples/aws-hive-zstd.toml", "", ""},
		{"s3://team-config/sinks/prod.toml", "arn:aws:s3:::team-config/sinks/prod.toml", ""},
		{"ssm:/iggy/sink", "", "arn:aws:ssm:us-east-1:123456789012:parameter/iggy/sink"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			params := map[string]string{"SinkConfig": tc.value}
			for k, v := range requiredParams {
				params[k] = v
			}
			s := newStack(t, templateYAML(t), params)
			if env := functionEnv(t, s); env["SINK_CONFIG"] != tc.value {
				t.Errorf("SINK_CONFIG = %q, want %q", env["SINK_CONFIG"], tc.value)
			}
			var objects, parameters []string
			for _, st := range statements(t, s) {
				// The sink's own objects are readable under the prefix (create-only
				// writes compare them); only reads beyond them are counted here.
				if slices.Contains(st.actions, "s3:GetObject") && !slices.Contains(st.actions, "s3:PutObject") {
					objects = append(objects, st.resources...)
				}
				if slices.Contains(st.actions, "ssm:GetParameter") {
					parameters = append(parameters, st.resources...)
				}
			}
			if want := nonEmpty(tc.object); !slices.Equal(objects, want) {
				t.Errorf("s3:GetObject on %v, want %v", objects, want)
			}
			if want := nonEmpty(tc.parameter); !slices.Equal(parameters, want) {
				t.Errorf("ssm:GetParameter on %v, want %v", parameters, want)
			}
		})
	}
	decl := mapAt(t, templateYAML(t), "Parameters")["SinkConfig"].(map[string]any)
	for _, bad := range []string{"s3://bucket-only", "ssm:no-slash", "/abs/path.toml", "s3:/one-slash/key", "file.toml; rm -rf"} {
		if err := checkParameter(decl, bad); err == nil {
			t.Errorf("SinkConfig=%q is accepted; the pattern should refuse it", bad)
		}
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

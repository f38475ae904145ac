package config

import (
	"strings"
	"testing"
	"time"
)

// TestKeysCannotLeaveThePrefix (issue 15 item 3): a prefix or path template
// whose fixed text would move keys out of the prefix, or give them an empty
// part, is refused at load, naming the setting.
func TestKeysCannotLeaveThePrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"prefix ../", map[string]string{"SINK_PREFIX": "../"}, []string{"SINK_PREFIX", "plugin_config.prefix", `"../"`, `".."`}},
		{"prefix a/../b", map[string]string{"SINK_PREFIX": "a/../b"}, []string{"SINK_PREFIX", `".."`}},
		{"prefix a//b", map[string]string{"SINK_PREFIX": "a//b"}, []string{"SINK_PREFIX", "empty"}},
		{"template ../../{stream}", map[string]string{"SINK_PATH_TEMPLATE": "../../{stream}"}, []string{"SINK_PATH_TEMPLATE", "plugin_config.path_template", `".."`}},
		{"template /{stream}", map[string]string{"SINK_PATH_TEMPLATE": "/{stream}/{topic}"}, []string{"SINK_PATH_TEMPLATE", "empty"}},
		{"template {stream}-{topic}", map[string]string{"SINK_PATH_TEMPLATE": "{stream}-{topic}"}, []string{"SINK_PATH_TEMPLATE", "{stream} and {topic}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t"}
			for k, v := range tc.env {
				env[k] = v
			}
			c, err := Load("", envOf(env))
			if err == nil {
				t.Fatalf("loaded: %s", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	if _, err := loadString(t, minimal+"prefix = \"../\"\n", nil); err == nil || !strings.Contains(err.Error(), "plugin_config.prefix") {
		t.Errorf("prefix \"../\" in the file: %v", err)
	}
	// Upstream's trimming still applies.
	c, err := loadString(t, minimal+"prefix = \"/iggy/raw/\"\n", nil)
	if err != nil || c.Plugin.Prefix != "/iggy/raw/" {
		t.Fatalf("prefix /iggy/raw/: %v", err)
	}
}

// TestNamesRenderingAlikeRefused (issue 10 case 2): two configured topics
// (or streams) whose names render to the same key segment are refused,
// naming both; the same topic by name and by "name:" counts as listed twice.
func TestNamesRenderingAlikeRefused(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"topics orders v2 and orders_v2", "[[streams]]\nstream = \"app\"\ntopics = [\"orders v2\", \"orders_v2\"]\n", []string{"streams[0].topics", `"orders v2"`, `"orders_v2"`, "overwrite"}},
		{"topics café and cafè", "[[streams]]\nstream = \"app\"\ntopics = [\"café\", \"cafè\"]\n", []string{`"café"`, `"cafè"`, `{topic}="caf_"`}},
		{"streams a b and a_b", "[[streams]]\nstream = \"a b\"\ntopics = [\"t\"]\n[[streams]]\nstream = \"a_b\"\ntopics = [\"t\"]\n", []string{"streams[1].stream", `"a b"`, `"a_b"`}},
		{"topic and name:topic", "[[streams]]\nstream = \"app\"\ntopics = [\"x\", \"name:x\"]\n", []string{"streams[0].topics", "already drained"}},
		{"topic 1 and 01", "[[streams]]\nstream = \"app\"\ntopics = [\"1\", \"01\"]\n", []string{"already drained"}},
		{"empty name:", "[[streams]]\nstream = \"app\"\ntopics = [\"name:\"]\n", []string{"streams[0].topics", `"name:" must be followed`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadString(t, tc.doc+"[plugin_config]\nbucket = \"b\"\nregion = \"us-east-1\"\n", nil)
			if err == nil {
				t.Fatalf("loaded: %s", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	// Ids are checked once resolved; names that differ after rendering pass.
	if _, err := loadString(t, "[[streams]]\nstream = \"app\"\ntopics = [\"orders v2\", \"1\", \"name:1\", \"orders-v2\"]\n[plugin_config]\nbucket = \"b\"\nregion = \"us-east-1\"\n", nil); err != nil {
		t.Fatalf("distinct names refused: %v", err)
	}
}

// TestEndpointUserinfoRedacted (issue 15 item 9): credentials in the endpoint
// URL never appear in the configuration line or in an error.
func TestEndpointUserinfoRedacted(t *testing.T) {
	const secret = "SECRET-in-url-42"
	c, err := Load("", envOf(map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t",
		"SINK_ENDPOINT": "http://user:" + secret + "@127.0.0.1:9000"}))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.String(); strings.Contains(s, secret) || strings.Contains(s, "user:") || !strings.Contains(s, `plugin_config.endpoint="http://[redacted]@127.0.0.1:9000"`) {
		t.Fatalf("configuration line shows the endpoint's userinfo: %s", s)
	}
	if c.Plugin.Endpoint != "http://user:"+secret+"@127.0.0.1:9000" {
		t.Fatalf("the value itself must stay intact for the caller: %q", c.Plugin.Endpoint)
	}
	for _, bad := range []string{"ftp://user:" + secret + "@host", "http://user:" + secret + "@"} {
		_, err := Load("", envOf(map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t", "SINK_ENDPOINT": bad}))
		if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "SINK_ENDPOINT") {
			t.Errorf("endpoint %q: error %v (must name the setting, never the userinfo)", bad, err)
		}
		_, err = loadString(t, minimal+"endpoint = \""+bad+"\"\n", nil)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("endpoint %q in the file: error %v", bad, err)
		}
	}
}

// TestSettingsThatMakeRunsUseless (issue 15 item 6): a lease below what the
// state store accepts, or a deadline margin that leaves a run no time, is
// refused at load, naming the setting.
func TestSettingsThatMakeRunsUseless(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"lease 500µs", map[string]string{"SINK_LEASE_DURATION": "500us"}, []string{"SINK_LEASE_DURATION", "at least 1s"}},
		{"lease 999ms", map[string]string{"SINK_LEASE_DURATION": "999ms"}, []string{"SINK_LEASE_DURATION", "at least 1s"}},
		{"margin equals run_timeout", map[string]string{"SINK_DEADLINE_MARGIN": "45s"}, []string{"plugin_config.deadline_margin", "SINK_DEADLINE_MARGIN", "run_timeout (45s)"}},
		{"margin above run_timeout", map[string]string{"SINK_DEADLINE_MARGIN": "10s", "SINK_RUN_TIMEOUT": "5s"}, []string{"deadline_margin", "run_timeout (5s)"}},
		{"run_timeout under a second", map[string]string{"SINK_RUN_TIMEOUT": "10ms"}, []string{"SINK_RUN_TIMEOUT", "at least 1s"}},
		{"max_json_depth 0", map[string]string{"SINK_MAX_JSON_DEPTH": "0"}, []string{"SINK_MAX_JSON_DEPTH", "between 1 and 10000"}},
		{"max_json_depth 10001", map[string]string{"SINK_MAX_JSON_DEPTH": "10001"}, []string{"SINK_MAX_JSON_DEPTH", "between 1 and 10000"}},
		{"iggy request_timeout 0", map[string]string{"IGGY_REQUEST_TIMEOUT": "0s"}, []string{"IGGY_REQUEST_TIMEOUT", "greater than 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t"}
			for k, v := range tc.env {
				env[k] = v
			}
			c, err := Load("", envOf(env))
			if err == nil {
				t.Fatalf("loaded: %s", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
	c, err := Load("", envOf(map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t", "SINK_LEASE_DURATION": "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Plugin
	if p.LeaseDuration != time.Second || p.RunTimeout != 45*time.Second || p.DeadlineMargin != 10*time.Second ||
		p.AWSRequestTimeout != 10*time.Second || p.AWSCallTimeout != 30*time.Second || p.MaxJSONDepth != 128 || c.Iggy.RequestTimeout != 30*time.Second {
		t.Fatalf("defaults: %s", c)
	}
}

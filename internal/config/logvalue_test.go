package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestLogValueShowsWhatDiffersFromTheDefaults(t *testing.T) {
	file := `
[[streams]]
stream = "app"
topics = ["logs", "audit"]

[plugin_config]
bucket = "b"
region = "us-east-1"
path_template = "{stream}/{topic}/{date}"
compression = "zstd"
secret_access_key = "s3-secret-value"
access_key_id = "AKIA"

[iggy]
password = "iggy-secret-value"

[transforms.delete_fields]
enabled = true
fields = ["x"]
`
	cfg, err := LoadBytes([]byte(file), "sink.toml", envOf(map[string]string{"SINK_MAX_FILE_AGE": "1m"}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("configuration", "config", cfg)
	var line struct{ Config map[string]any }
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"plugin_config.bucket": "b", "plugin_config.region": "us-east-1", "plugin_config.path_template": "{stream}/{topic}/{date}",
		"plugin_config.compression": "zstd", "plugin_config.access_key_id": "AKIA", "plugin_config.secret_access_key": "[redacted]",
		"plugin_config.max_file_age": float64(60e9), "iggy.password": "[redacted]",
		"streams[0].stream": "app", "streams[0].topics": []any{"logs", "audit"}, "streams[0].consumer_group": "iggy-connect-sink-s3",
		"transforms": []any{"delete_fields"},
	}
	for k, v := range want {
		got, _ := json.Marshal(line.Config[k])
		exp, _ := json.Marshal(v)
		if string(got) != string(exp) {
			t.Errorf("%s = %s, want %s", k, got, exp)
		}
	}
	if len(line.Config) != len(want) {
		t.Errorf("logged %d options, want only the %d that differ from the defaults: %v", len(line.Config), len(want), line.Config)
	}
	if strings.Contains(buf.String(), "secret-value") {
		t.Fatalf("a secret was logged: %s", buf.String())
	}
}

func TestEnabledFromTheEnvironment(t *testing.T) {
	cfg, err := Load("", envOf(map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t", "SINK_ENABLED": "false"}))
	if err != nil || cfg.Enabled {
		t.Fatalf("SINK_ENABLED=false: enabled=%v, %v", cfg != nil && cfg.Enabled, err)
	}
	_, err = Load("", envOf(map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "s", "SINK_TOPICS": "t", "SINK_ENABLED": "nope"}))
	if err == nil || !strings.Contains(err.Error(), "SINK_ENABLED") {
		t.Fatalf("SINK_ENABLED=nope: %v", err)
	}
}

func TestLoadBytesNamesItsSource(t *testing.T) {
	_, err := LoadBytes([]byte("[plugin_config]\nbucket = \"b\"\nregion = \"us-east-1\"\nmax_file_size = \"8Mb\"\n"), "s3://cfg/sink.toml", nil)
	if err == nil || !strings.Contains(err.Error(), "s3://cfg/sink.toml") || !strings.Contains(err.Error(), "8Mb") {
		t.Fatalf("error %v does not name the source and the value", err)
	}
}

package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretRendering(t *testing.T) {
	s := Secret("hunter2")
	renders := map[string]string{
		"String":   s.String(),
		"%v":       fmt.Sprintf("%v", s),
		"%s":       fmt.Sprintf("%s", s),
		"%q":       fmt.Sprintf("%q", s),
		"%x":       fmt.Sprintf("%x", s),
		"%#v":      fmt.Sprintf("%#v", s),
		"%+v":      fmt.Sprintf("%+v", struct{ P Secret }{s}),
		"GoString": s.GoString(),
	}
	for name, got := range renders {
		if strings.Contains(got, "hunter2") || !strings.Contains(got, "[redacted]") {
			t.Errorf("%s = %q, want [redacted] and no secret", name, got)
		}
	}
	j, _ := json.Marshal(struct{ P Secret }{s})
	if string(j) != `{"P":"[redacted]"}` {
		t.Errorf("json = %s", j)
	}
	if s.Reveal() != "hunter2" {
		t.Errorf("Reveal = %q", s.Reveal())
	}
	var empty Secret
	if empty.String() != "" || fmt.Sprint(empty) != "" {
		t.Errorf("empty secret renders %q", empty.String())
	}
	if j, _ := json.Marshal(empty); string(j) != `""` {
		t.Errorf("empty secret json = %s", j)
	}
}

// TestConfigNeverShowsSecrets loads secrets from file and env and checks every
// way a caller might log the config.
func TestConfigNeverShowsSecrets(t *testing.T) {
	secrets := []string{"file-secret-key-0001", "env-iggy-pass-0002", "env-iggy-token-0003"}
	c, err := loadString(t, minimal+`
access_key_id = "AKIAEXAMPLE"
secret_access_key = "file-secret-key-0001"
`, map[string]string{"IGGY_PASSWORD": "env-iggy-pass-0002", "IGGY_TOKEN": "env-iggy-token-0003"})
	if err != nil {
		t.Fatal(err)
	}
	var jsonLog, textLog bytes.Buffer
	slog.New(slog.NewJSONHandler(&jsonLog, nil)).Info("cfg", "config", c, "iggy", c.Iggy, "plugin", c.Plugin)
	slog.New(slog.NewTextHandler(&textLog, nil)).Info("cfg", "config", c, "iggy", c.Iggy, "password", c.Iggy.Password)
	js, _ := json.Marshal(c)
	renders := map[string]string{
		"String":    c.String(),
		"%v":        fmt.Sprintf("%v", c),
		"%+v":       fmt.Sprintf("%+v", *c),
		"%#v":       fmt.Sprintf("%#v", *c),
		"iggy %+v":  fmt.Sprintf("%+v", c.Iggy),
		"json":      string(js),
		"slog json": jsonLog.String(),
		"slog text": textLog.String(),
	}
	for name, got := range renders {
		for _, s := range secrets {
			if strings.Contains(got, s) {
				t.Errorf("%s shows secret %q: %s", name, s, got)
			}
		}
		if !strings.Contains(got, "[redacted]") {
			t.Errorf("%s does not show [redacted]: %s", name, got)
		}
	}
	str := c.String()
	for _, want := range []string{`plugin_config.bucket="b"`, `plugin_config.secret_access_key="[redacted]"`, `iggy.password="[redacted]"`, `streams[0].topics=["t"]`, "plugin_config.path_style=auto", `plugin_config.max_file_size=8388608`} {
		if !strings.Contains(str, want) {
			t.Errorf("String() lacks %s: %s", want, str)
		}
	}
}

func TestErrorsNeverShowSecrets(t *testing.T) {
	const secret = "TopSecret-9f8e7d"
	tests := []struct {
		name string
		doc  string
		env  map[string]string
	}{
		{"secret of wrong type", minimal + "secret_access_key = 12345678987654321\n", nil},
		{"secret without key id", minimal + "secret_access_key = \"" + secret + "\"\n", nil},
		{"unquoted secret", minimal + "secret_access_key = " + secret + "\n", nil},
		{"unquoted iggy password", minimal + "[iggy]\npassword = " + secret + "\n", nil},
		{"password wrong type", minimal + "[iggy]\npassword = [\"" + secret + "\"]\n", nil},
		{"env secret without key id", minimal, map[string]string{"SINK_SECRET_ACCESS_KEY": secret}},
		{"env secret and bad later value", minimal, map[string]string{"IGGY_PASSWORD": secret, "IGGY_CONNECT_TIMEOUT": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadString(t, tt.doc, tt.env)
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "12345678987654321") {
				t.Errorf("error shows the secret: %v", err)
			}
			if !strings.Contains(err.Error(), "secret") && !strings.Contains(err.Error(), "password") && !strings.Contains(err.Error(), "connect_timeout") && !strings.Contains(err.Error(), "access_key_id") {
				t.Errorf("error does not name the key: %v", err)
			}
		})
	}
}

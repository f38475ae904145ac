package app

import (
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func loadEnv(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	base := map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "app", "SINK_TOPICS": "logs"}
	for k, v := range env {
		base[k] = v
	}
	cfg, err := config.Load("", func(k string) (string, bool) { v, ok := base[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

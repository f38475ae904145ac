package devenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindToolPrefersRepoBin(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(bin, "sh")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := FindTool(root, "sh"); err != nil || got != tool {
		t.Fatalf("FindTool = %q, %v; want %q", got, err, tool)
	}
	_, err := FindTool(root, "no-such-tool-4711")
	if err == nil || !strings.Contains(err.Error(), "make local") {
		t.Fatalf("missing tool: %v", err)
	}
}

func TestEnvFile(t *testing.T) {
	s := &Stack{S3Endpoint: "http://127.0.0.1:9000", DynamoEndpoint: "http://127.0.0.1:8000", IggyAddr: "127.0.0.1:8090",
		Bucket: "iggy-local", Table: "iggy-s3-sink-state", Seed: Seed{Stream: "app", Topic: "logs", Partitions: 4, Messages: 1000}}
	path := filepath.Join(t.TempDir(), "local.env")
	if err := s.WriteEnvFile(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"export AWS_ACCESS_KEY_ID=iggy-local\n", "export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000\n",
		"export AWS_ENDPOINT_URL_S3=http://127.0.0.1:9000\n", "export IGGY_ADDRESS=127.0.0.1:8090\n", "export SINK_BUCKET=iggy-local\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("local.env lacks %q:\n%s", want, data)
		}
	}
}

func TestStartRefusesUnknownS3(t *testing.T) {
	_, err := Start(t.Context(), Options{Root: t.TempDir(), S3: "s3proxy"})
	if err == nil || !strings.Contains(err.Error(), `"s3proxy": want "versitygw" or "minio"`) {
		t.Fatalf("Start with S3 s3proxy: %v", err)
	}
}

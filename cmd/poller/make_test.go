package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestBuildSinkFunctionChecksConfigFileFirst: `CONFIG_FILE=typo.toml sam
// build` runs `make build-SinkFunction`, which must refuse the path before
// its two cross-compiles (minutes on a cold cache), naming the setting and
// the fix. Nothing is written to the package directory.
func TestBuildSinkFunctionChecksConfigFileFirst(t *testing.T) {
	testenv.RequireTool(t, "make")
	tests := []struct {
		file string
		want []string
	}{
		{"typo.toml", []string{"CONFIG_FILE=typo.toml: no such file", "CONFIG_FILE=examples/aws-hive-zstd.toml"}},
		{"examples/no-such-example.toml", []string{"CONFIG_FILE=examples/no-such-example.toml: no such file"}},
		{"/etc/hostname", []string{"CONFIG_FILE=/etc/hostname: give a relative path inside the repository"}},
		{"../outside.toml", []string{"CONFIG_FILE=../outside.toml: give a relative path inside the repository"}},
		{"s3://bucket/sink.toml", []string{"CONFIG_FILE=s3://bucket/sink.toml: give a relative path inside the repository", "SinkConfig"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			pkg := t.TempDir()
			cmd := exec.Command("make", "-s", "build-SinkFunction", "ARTIFACTS_DIR="+pkg, "CONFIG_FILE="+tt.file)
			cmd.Dir = testenv.RepoRoot(t)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("make build-SinkFunction CONFIG_FILE=%s succeeded:\n%s", tt.file, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("the error lacks %q:\n%s", want, out)
				}
			}
			for _, name := range []string{"bootstrap", "bootstrap-iceberg"} {
				if _, err := os.Stat(filepath.Join(pkg, name)); err == nil {
					t.Errorf("%s was built before CONFIG_FILE was refused", name)
				}
			}
		})
	}
}

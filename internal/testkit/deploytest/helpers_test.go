package deploytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

func inCI() bool { return os.Getenv("CI") == "true" }

// missingTool skips the test, or fails it in CI where every tool must be present.
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	testenv.SkipInCheck(t, "the template's tools")
	if inCI() {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// requireTool finds a tool in <repo>/.bin (where make puts it) or $PATH.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	testenv.SkipInCheck(t, name)
	local := filepath.Join(repoRoot(t), ".bin", name)
	if fi, err := os.Stat(local); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return local
	}
	p, err := exec.LookPath(name)
	if err != nil {
		missingTool(t, "%s not in .bin/ or on PATH (make py-tools / make sam-cli install it): %v", name, err)
	}
	return p
}

// pythonWithTranslator is the Python that has aws-sam-translator: the one
// of the venv `make py-tools` links .bin/cfn-lint from, else python3 from PATH.
func pythonWithTranslator(t *testing.T) string {
	t.Helper()
	testenv.SkipInCheck(t, "aws-sam-translator")
	if lint, err := filepath.EvalSymlinks(filepath.Join(repoRoot(t), ".bin", "cfn-lint")); err == nil {
		if py := filepath.Join(filepath.Dir(lint), "python3"); fileExists(py) {
			return py
		}
	}
	return requireTool(t, "python3")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var rootOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
})

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := rootOnce()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func templateYAML(t *testing.T) map[string]any {
	t.Helper()
	return parseTemplateYAML(t, readRepoFile(t, "template.yaml"))
}

// samTransformScript runs the SAM transform offline (aws-sam-translator), as
// `sam package` + CloudFormation would: CodeUri must be an S3 URI first, and the
// policy loader must not call IAM. Exit status 3 means samtranslator is missing.
const samTransformScript = `
import json, sys
try:
    from samtranslator.yaml_helper import yaml_parse
    from samtranslator.translator.transform import transform
    from samtranslator.public.exceptions import InvalidDocumentException
except ImportError as e:
    print(e, file=sys.stderr)
    sys.exit(3)

class NoIAMPolicyLoader:
    def load(self):
        return {}

with open(sys.argv[1]) as f:
    template = yaml_parse(f.read())
for resource in template.get("Resources", {}).values():
    if resource.get("Type") == "AWS::Serverless::Function":
        resource.setdefault("Properties", {})["CodeUri"] = "s3://bucket/key"
try:
    out = transform(template, {}, NoIAMPolicyLoader())
except InvalidDocumentException as e:
    sys.exit("SAM transform failed: " + "; ".join(c.message for c in e.causes))
json.dump(out, sys.stdout)
`

var transformOnce sync.Once
var transformed map[string]any
var transformMissing, transformFailure string

// samTransform returns template.yaml as CloudFormation JSON after the SAM transform.
func samTransform(t *testing.T) map[string]any {
	t.Helper()
	python := pythonWithTranslator(t)
	transformOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, "-c", samTransformScript, filepath.Join(repoRoot(t), "template.yaml"))
		cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION="+testRegion)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 3:
			transformMissing = "python3 has no aws-sam-translator: " + stderr.String()
		case err != nil:
			transformFailure = err.Error() + ": " + stderr.String()
		default:
			if err := json.Unmarshal(stdout.Bytes(), &transformed); err != nil {
				transformFailure = "transform output is not JSON: " + err.Error()
			}
		}
	})
	if transformMissing != "" {
		missingTool(t, "%s", transformMissing)
	}
	if transformFailure != "" {
		t.Fatal(transformFailure)
	}
	return transformed
}

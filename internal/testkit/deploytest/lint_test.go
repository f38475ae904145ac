package deploytest

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCfnLint(t *testing.T) {
	cfnLint := requireTool(t, "cfn-lint")
	lint := func(t *testing.T, dir string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cfnLint, "template.yaml")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("template.yaml is clean", func(t *testing.T) {
		out, err := lint(t, repoRoot(t))
		if err != nil || out != "" {
			t.Fatalf("cfn-lint template.yaml: %v\n%s", err, out)
		}
	})

	// The same check must notice a broken SAM event, or a clean result means nothing.
	t.Run("a misspelt event property is caught", func(t *testing.T) {
		tpl := string(readRepoFile(t, "template.yaml"))
		broken := strings.Replace(tpl, "            Schedule: !Ref ScheduleRate", "            Schedul: !Ref ScheduleRate", 1)
		if broken == tpl {
			t.Fatal("the schedule event's Schedule property was not found in template.yaml")
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "template.yaml"), []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := lint(t, dir)
		if err == nil || !strings.Contains(out, "Schedul") {
			t.Fatalf("cfn-lint accepted a template with a misspelt event property: %v\n%s", err, out)
		}
	})
}

// samEnv keeps the SAM CLI offline and quiet, and the build at the template's
// default architecture (the Makefile reads ARCH from the environment).
func samEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ARCH=") })
	return append(env, "AWS_DEFAULT_REGION="+testRegion, "SAM_CLI_TELEMETRY=0")
}

// lookSAM finds the SAM CLI, which `make sam-cli` installs; missing, the
// test skips locally and fails in CI like every other tool.
func lookSAM(t *testing.T) string {
	t.Helper()
	return requireTool(t, "sam")
}

func TestSAMValidateLint(t *testing.T) {
	sam := lookSAM(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sam, "validate", "--lint", "--template-file", "template.yaml")
	cmd.Dir = repoRoot(t)
	cmd.Env = samEnv()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is a valid SAM Template") {
		t.Fatalf("sam validate --lint: %v\n%s", err, out)
	}
}

// TestSAMBuild runs the makefile build the template asks for and checks that
// the artifact is a static bootstrap for the template's default architecture.
func TestSAMBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Lambda binary")
	}
	sam := lookSAM(t)
	root := repoRoot(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil || !strings.Contains(string(makefile), "build-SinkFunction:") {
		t.Skip("the Makefile has no build-SinkFunction target yet")
	}
	buildDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// Run from a scratch directory: sam leaves a .aws-sam/ in its working directory.
	cmd := exec.CommandContext(ctx, sam, "build", "--template-file", filepath.Join(root, "template.yaml"),
		"--base-dir", root, "--build-in-source", "--build-dir", buildDir, "--cache-dir", filepath.Join(t.TempDir(), "cache"))
	cmd.Dir = t.TempDir()
	cmd.Env = samEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sam build: %v\n%s", err, out)
	}
	// bootstrap, and the full build it hands over to when tables are configured.
	for _, name := range []string{"bootstrap", "bootstrap-iceberg"} {
		f, err := elf.Open(filepath.Join(buildDir, "SinkFunction", name))
		if err != nil {
			t.Fatalf("sam build produced no %s ELF: %v", name, err)
		}
		if f.Machine != elf.EM_AARCH64 {
			t.Errorf("%s is built for %v, want arm64 (the template's default Architecture)", name, f.Machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked; provided.al2023 needs CGO_ENABLED=0", name)
			}
		}
		f.Close()
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// The README is the front door and docs/ the reference; these tests keep
// them honest: the README fits on a few screens, every link resolves, and
// every snippet marked <!-- doc-test: ... --> is what the code does.

const readmeMaxLines = 300

// docFiles returns README.md and docs/*.md, by path relative to the root.
func docFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range append(paths, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(b)
	}
	return out
}

func TestREADMEFitsAFewScreens(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Fatalf("README.md has %d lines; keep it at most %d and move the reference to docs/", n, readmeMaxLines)
	}
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	fenceRE  = regexp.MustCompile("(?s)```.*?```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
)

// anchors are a Markdown file's heading anchors, as GitHub renders them.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(fenceRE.ReplaceAllString(md, ""), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		h = strings.ToLower(h)
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// TestDocsLinksResolve: every relative link of the README and docs/ names a
// file of the repository, and an anchor into Markdown names a heading there.
func TestDocsLinksResolve(t *testing.T) {
	root := testenv.RepoRoot(t)
	files := docFiles(t, root)
	for name, text := range files {
		prose := codeSpan.ReplaceAllString(fenceRE.ReplaceAllString(text, ""), "")
		for _, m := range mdLink.FindAllStringSubmatch(prose, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := name
			if path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(name), path))
				if strings.HasPrefix(target, "..") {
					t.Errorf("%s: link %q leaves the repository", name, link)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, target)); err != nil {
					t.Errorf("%s: link %q: no such file %s", name, link, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			md, ok := files[target]
			if !ok {
				b, err := os.ReadFile(filepath.Join(root, target))
				if err != nil {
					t.Errorf("%s: link %q: %v", name, link, err)
					continue
				}
				md = string(b)
			}
			if !anchors(md)[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", name, link, target, anchor)
			}
		}
	}
}

// snippet is a code block of the documentation marked for a test.
type snippet struct {
	file, kind, name, body string
}

var snippetRE = regexp.MustCompile("(?s)<!-- doc-test: (\\w+)(?: ([\\w-]+))? -->\n```[a-z]*\n(.*?)```")

func snippets(t *testing.T, files map[string]string) []snippet {
	var out []snippet
	for name, text := range files {
		for _, m := range snippetRE.FindAllStringSubmatch(text, -1) {
			out = append(out, snippet{file: name, kind: m[1], name: m[2], body: m[3]})
		}
	}
	return out
}

// addrRE matches the loopback addresses a test's servers get.
var addrRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// TestDocsSnippets runs every marked snippet: "run" blocks as shell
// commands in the repository (they must succeed), "config" blocks through
// the configuration loader, and "output NAME" blocks against what the code
// prints for NAME (loopback ports aside).
func TestDocsSnippets(t *testing.T) {
	root := testenv.RepoRoot(t)
	outputs := map[string]func(t *testing.T) string{
		"bad-config":        badConfigOutput,
		"check-iggy":        checkIggyOutput,
		"protocol-mismatch": protocolMismatchOutput,
	}
	seen := map[string]bool{}
	for _, s := range snippets(t, docFiles(t, root)) {
		t.Run(s.file+"/"+s.kind+"/"+s.name, func(t *testing.T) {
			switch s.kind {
			case "run":
				testenv.RequireTool(t, "bash")
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", s.body)
				cmd.Dir = root
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("the documented commands failed: %v\n%s\n%s", err, s.body, out)
				}
			case "config":
				path := filepath.Join(t.TempDir(), "sink.toml")
				if err := os.WriteFile(path, []byte(s.body), 0o600); err != nil {
					t.Fatal(err)
				}
				if _, err := config.Load(path, func(string) (string, bool) { return "", false }); err != nil {
					t.Fatalf("the documented configuration does not load: %v", err)
				}
			case "output":
				gen, ok := outputs[s.name]
				if !ok {
					t.Fatalf("no generator for output %q", s.name)
				}
				seen[s.name] = true
				got := addrRE.ReplaceAllString(strings.TrimSpace(gen(t)), "127.0.0.1:8090")
				if want := strings.TrimSpace(s.body); got != want {
					t.Fatalf("the documentation shows\n  %s\nbut the code prints\n  %s", want, got)
				}
			default:
				t.Fatalf("unknown doc-test kind %q", s.kind)
			}
		})
	}
	for name := range outputs {
		if !seen[name] {
			t.Errorf("output %q is shown nowhere in the documentation", name)
		}
	}
}

func badConfigOutput(t *testing.T) string {
	t.Setenv("SINK_BUCKET", "b")
	t.Setenv("SINK_REGION", "us-east-1")
	t.Setenv("SINK_STREAM", "s")
	t.Setenv("SINK_TOPICS", "t")
	t.Setenv("SINK_MAX_FILE_SIZE", "8Mb")
	var out, errb bytes.Buffer
	if code := run([]string{"once"}, nil, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, errb.String())
	}
	for _, line := range strings.Split(errb.String(), "\n") {
		if i := strings.Index(line, "config: "); i >= 0 {
			return line[i:]
		}
	}
	t.Fatalf("no config: line in %q", errb.String())
	return ""
}

// broker09 starts a broker speaking 0.9's protocol for the test.
func broker09(t *testing.T) *iggytest.Broker {
	b, err := iggytest.Start(iggytest.WithProtocol(iggytest.Protocol09))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func checkIggyOutput(t *testing.T) string {
	b := broker09(t)
	if err := b.Seed("app", "logs", 1, 1); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "app", "SINK_TOPICS": "logs",
		"SINK_ENDPOINT": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
		"SINK_AWS_CALL_TIMEOUT": "1s", "SINK_AWS_REQUEST_TIMEOUT": "300ms", "IGGY_ADDRESS": b.Addr()} {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	run([]string{"check"}, nil, &out, &errb) // S3 and DynamoDB are not there: those lines fail
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "ok    iggy") {
			return line
		}
	}
	t.Fatalf("no iggy line in %q (%s)", out.String(), errb.String())
	return ""
}

func protocolMismatchOutput(t *testing.T) string {
	b := broker09(t)
	_, err := source.Open(context.Background(), source.Config{Address: b.Addr(), Username: "iggy", Password: "iggy", Protocol: source.Protocol010})
	if err == nil {
		t.Fatal("a pinned 0.10 logged in to a 0.9 broker")
	}
	return err.Error()
}

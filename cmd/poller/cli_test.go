package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs:\n got %q\nwant %q", path, got, want)
	}
}

// decompress undoes the object's compression, checking its magic bytes.
func decompress(t *testing.T, compression string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch compression {
	case "gzip":
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Fatalf("not gzip: % x", b[:min(4, len(b))])
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "zstd":
		if !bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			t.Fatalf("not zstd: % x", b[:min(4, len(b))])
		}
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setEnv(t *testing.T, kv map[string]string) {
	for k, v := range kv {
		t.Setenv(k, v)
	}
}

// TestRenderEachFormat: `poller render` writes the object for each format
// and compression, and names its key on stderr.
func TestRenderEachFormat(t *testing.T) {
	input, err := os.ReadFile(filepath.Join("testdata", "render", "input.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		format, compression, ext string
	}{
		{"json_lines", "none", "jsonl"},
		{"json_lines", "gzip", "jsonl.gz"},
		{"json_array", "none", "json"},
		{"json_array", "zstd", "json.zst"},
		{"raw", "none", "bin"},
		{"raw", "gzip", "bin.gz"},
	}
	for _, tc := range tests {
		t.Run(tc.format+"_"+tc.compression, func(t *testing.T) {
			setEnv(t, map[string]string{"SINK_BUCKET": "b", "SINK_REGION": "us-east-1", "SINK_STREAM": "app", "SINK_TOPICS": "logs",
				"SINK_OUTPUT_FORMAT": tc.format, "SINK_COMPRESSION": tc.compression, "SINK_PREFIX": "iggy"})
			var out, errb bytes.Buffer
			code := run([]string{"render", "-time", "2024-03-16T14:02:31Z", "-partition", "3", "-offset", "100"}, bytes.NewReader(input), &out, &errb)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			golden(t, "render/"+tc.format+".golden", decompress(t, tc.compression, out.Bytes()))
			key := "s3://b/iggy/app/logs/2024-03-16/14/00003-00000000000000000100-00000000000000000104." + tc.ext
			if !strings.Contains(errb.String(), key) || !strings.Contains(errb.String(), "1 payloads are not valid JSON") {
				t.Fatalf("stderr does not name the key %s and the invalid payload:\n%s", key, errb.String())
			}
		})
	}
}

// TestExamples: every file in examples/ loads on its own (no environment)
// and renders the sample messages to the checked-in output.
func TestExamples(t *testing.T) {
	root := testenv.RepoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.toml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	input, err := os.ReadFile(filepath.Join("testdata", "examples", "input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".toml")
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Load(f, nil)
			if err != nil {
				t.Fatalf("%s does not load on its own: %v", f, err)
			}
			var out, errb bytes.Buffer
			code := run([]string{"render", "-config", f, "-time", "2024-03-16T14:02:31Z"}, bytes.NewReader(input), &out, &errb)
			if code != 0 {
				t.Fatalf("render exit %d: %s", code, errb.String())
			}
			golden(t, "examples/"+name+".golden", decompress(t, string(cfg.Plugin.Compression), out.Bytes()))
		})
	}
}

func TestFlagsAfterTheCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "sink.toml")
	if err := os.WriteFile(bad, []byte("[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\n[plugin_config]\nbucket = \"b\"\nregion = \"r\"\nmax_file_size = \"8Mb\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"once", "-config", bad}, {"-config", bad, "once"}, {"-log-level", "debug", "once", "-config=" + bad}} {
		var out, errb bytes.Buffer
		if code := run(args, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "8Mb") || !strings.Contains(errb.String(), bad) {
			t.Errorf("%q: exit %d, want 2 with the file's error:\n%s", args, code, errb.String())
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"once", "-envelope"}, "-envelope (a flag of render) does not apply"},
		{[]string{"once", "extra"}, `unexpected argument "extra"`},
		{[]string{"once", "-nope"}, "flag provided but not defined: -nope"},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, want 2 with %q:\n%s", tc.args, code, tc.want, errb.String())
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}, {"once", "--version"}} {
		var out, errb bytes.Buffer
		if code := run(args, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "iggy-s3-sink ") || !strings.Contains(out.String(), "go1.") {
			t.Errorf("%q: exit %d, stdout %q", args, code, out.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, nil, &out, &errb); code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, want := range []string{"once", "run", "check", "audit", "status", "render", "local", "demo", "version", "-log-format", "-envelope", "ssm:/",
		"poller help <command>", "docs/configuration.md", "Exit status:", "-create-table"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(out.String(), "README") {
		t.Errorf("help points to the README, whose configuration table moved to docs/configuration.md:\n%s", out.String())
	}
}

// TestHelpOfEachCommand: `poller help <command>` (stdout) and `poller
// <command> -h` (stderr) print what the command does, its own flags and
// the common ones, and no other command's flags; both exit 0. An unknown
// topic is bad usage.
func TestHelpOfEachCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd       string
		says      string
		own, not  []string
		noConfig  bool
		noFlagsAt bool
	}{
		{cmd: "once", says: "One drain run", own: []string{"-create-table", "-metrics"}, not: []string{"-interval", "-json"}},
		{cmd: "run", says: "every -interval", own: []string{"-interval", "-create-table"}, not: []string{"-json", "-envelope"}},
		{cmd: "check", says: "the state table", not: []string{"-create-table", "-interval"}},
		{cmd: "audit", says: "no unreported gap", own: []string{"-json"}, not: []string{"-create-table"}},
		{cmd: "status", says: "the lag", not: []string{"-json", "-create-table"}},
		{cmd: "render", says: "from stdin", own: []string{"-envelope", "-stream", "-topic", "-partition", "-offset", "-time", "-errors", "-value"}, not: []string{"-json"}},
		{cmd: "local", says: "make local", own: []string{"-env-file"}, noConfig: true},
		{cmd: "demo", says: "self-contained", noConfig: true},
		{cmd: "version", says: "VCS commit", noFlagsAt: true},
		{cmd: "help", says: "a command's", noFlagsAt: true},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{"help", tc.cmd}, nil, &out, &errb); code != 0 {
				t.Fatalf("help %s: exit %d: %s", tc.cmd, code, errb.String())
			}
			viaHelp := out.String()
			out.Reset()
			errb.Reset()
			if tc.cmd != "help" && tc.cmd != "version" {
				if code := run([]string{tc.cmd, "-h"}, nil, &out, &errb); code != 0 {
					t.Fatalf("%s -h: exit %d: %s", tc.cmd, code, errb.String())
				}
				if errb.String() != viaHelp {
					t.Fatalf("%s -h prints\n%s\nbut help %s prints\n%s", tc.cmd, errb.String(), tc.cmd, viaHelp)
				}
			}
			if !strings.HasPrefix(viaHelp, "Usage: poller "+tc.cmd) || !strings.Contains(viaHelp, tc.says) {
				t.Fatalf("help %s does not start with its usage line and say %q:\n%s", tc.cmd, tc.says, viaHelp)
			}
			for _, f := range tc.own {
				if !strings.Contains(viaHelp, "\n  "+f) {
					t.Errorf("help %s lacks its flag %s:\n%s", tc.cmd, f, viaHelp)
				}
			}
			for _, f := range tc.not {
				if strings.Contains(viaHelp, "\n  "+f) {
					t.Errorf("help %s shows another command's flag %s:\n%s", tc.cmd, f, viaHelp)
				}
			}
			common := []string{"-log-level", "-log-format", "-config"}
			switch {
			case tc.noFlagsAt:
				common = nil
				if strings.Contains(viaHelp, "\n  -") {
					t.Errorf("help %s shows flags:\n%s", tc.cmd, viaHelp)
				}
			case tc.noConfig:
				common = common[:2]
				if strings.Contains(viaHelp, "\n  -config") {
					t.Errorf("help %s shows -config, which it does not read:\n%s", tc.cmd, viaHelp)
				}
			}
			for _, f := range common {
				if !strings.Contains(viaHelp, "\n  "+f) {
					t.Errorf("help %s lacks the common flag %s:\n%s", tc.cmd, f, viaHelp)
				}
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run([]string{"help", "chek"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "chek"`) {
		t.Fatalf("help chek: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"-h"}, nil, &out, &errb); code != 0 || !strings.Contains(errb.String(), "Exit status:") {
		t.Fatalf("-h before a command: exit %d, want 0 and the usage:\n%s", code, errb.String())
	}
}

// TestExitStatusAsDocumented: the exit codes the usage lists, for what
// the usage says gives them (those of runs are in the tests of runs).
func TestExitStatusAsDocumented(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "sink.toml")
	if err := os.WriteFile(bad, []byte("[plugin_config]\nbucket = \"b\"\nmax_file_size = \"8Mb\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"help"}, 0},
		{[]string{"help", "audit"}, 0},
		{[]string{"check", "-h"}, 0},
		{[]string{"version"}, 0},
		{nil, 2},                                   // no command
		{[]string{"chek"}, 2},                      // an unknown command
		{[]string{"once", "-nope"}, 2},             // an unknown flag
		{[]string{"check", "-create-table"}, 2},    // a flag of another command
		{[]string{"status", "-interval", "1s"}, 2}, // a flag of another command
		{[]string{"once", "extra"}, 2},             // a stray argument
		{[]string{"check", "-config", bad}, 2},     // a configuration that does not load
		{[]string{"render", "-config", bad}, 2},    // the same for render
		{[]string{"help", "once", "run"}, 2},       // a stray argument to help
		{[]string{"audit", "-config", "/nonexistent/sink.toml"}, 2},
	} {
		var out, errb bytes.Buffer
		if code := run(tc.args, nil, &out, &errb); code != tc.code {
			t.Errorf("poller %q: exit %d, want %d:\n%s", tc.args, code, tc.code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"check", "-create-table"}, nil, &out, &errb); !strings.Contains(errb.String(), "-create-table (a flag of once, run) does not apply") {
		t.Errorf("check -create-table: exit %d: %s", code, errb.String())
	}
}

// TestVersionFromABuild: a binary built by the Makefile's flags names its
// commit even where the toolchain cannot stamp it.
func TestVersionFromABuild(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "poller")
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/iggy-s3-sink/iggy-s3-sink/internal/app.buildCommit=0123456789ab+modified", "-o", bin, ".")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(out), "commit 0123456789ab+modified") {
		t.Fatalf("--version: %v %q", err, out)
	}
}

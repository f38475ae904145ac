package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestREADMELocalTesting runs the README's "Local testing" commands as
// written, taken from the README itself so the two cannot drift: the first
// block (make local) in the background of a copy of the checkout, then the
// second block in a fresh shell, then Ctrl-C. It checks that the run wrote
// objects, the audit is clean, and the README's sample lines are what the
// commands print.
func TestREADMELocalTesting(t *testing.T) {
	root := testenv.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := localTestingBlocks(t, string(readme))
	testenv.SkipInCheck(t, "make local's servers")
	for _, tool := range []string{"make", "bash", "versitygw", "moto_server"} {
		testenv.RequireTool(t, tool)
	}
	if _, err := os.Stat(filepath.Join(root, ".bin", "moto_server")); err != nil {
		msg := "no .bin/moto_server: run make py-moto (or py-tools) first (make local would install it inside the test's copy)"
		if testenv.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := cleanCheckout(t, root)
	server := startTerminal1(t, dir, blocks[0])
	checkLocalSteps(t, server.out.String())
	env, err := os.ReadFile(filepath.Join(dir, "local.env"))
	if err != nil {
		t.Fatalf("make local wrote no local.env: %v", err)
	}

	// Terminal 2: the second block as typed, stopping at the first failure.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client := exec.CommandContext(ctx, "bash", "-e", "-c", blocks[1])
	client.Dir, client.Env = dir, freshShellEnv()
	out, err := client.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}
	checkLocalOutput(t, string(readme), string(out))

	// Ctrl-C: the terminal signals the whole foreground process group.
	if err := syscall.Kill(-server.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-server.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("make local did not stop on Ctrl-C")
	}
	if _, err := os.Stat(filepath.Join(dir, "local.env")); !os.IsNotExist(err) {
		t.Errorf("local.env is still there after Ctrl-C (%v)", err)
	}
	for _, addr := range envAddrs(string(env)) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still answers after Ctrl-C", addr)
		}
	}
}

type terminal struct {
	*exec.Cmd
	out    *testenv.LockedBuffer
	exited chan error
}

// startTerminal1 runs the first block (make local) in its own process
// group, as a shell in a terminal would, and waits for it to say "ready".
func startTerminal1(t *testing.T, dir, block string) *terminal {
	t.Helper()
	cmd := exec.Command("bash", "-c", block)
	cmd.Dir, cmd.Env = dir, freshShellEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &testenv.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term := &terminal{Cmd: cmd, out: out, exited: make(chan error, 1)}
	go func() { term.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("make local output:\n%s", out.String())
		}
	})
	waitForOutput(t, out, term.exited, "ready in ", 5*time.Minute)
	t.Logf("make local ready after %s (%s)", time.Since(started).Round(time.Millisecond), readyLine(out.String()))
	return term
}

// checkLocalSteps: make local said what it was doing, step by step, each
// with its time, and built or started no MinIO (versitygw is the default).
func checkLocalSteps(t *testing.T, out string) {
	t.Helper()
	for _, re := range []string{
		`(?m)^building the poller without Iceberg into \.bin/poller \.\.\. +\d+\.\ds$`,
		`(?m)^  versitygw answers at http://127\.0\.0\.1:\d+ +\d+\.\ds$`,
		`(?m)^  moto_server answers at http://127\.0\.0\.1:\d+ +\d+\.\ds$`,
		`(?m)^  the Iggy test broker listens at 127\.0\.0\.1:\d+ +\d+\.\ds$`,
		`(?m)^  created bucket "iggy-local" +\d+\.\ds$`,
		`(?m)^  created table "iggy-s3-sink-state" +\d+\.\ds$`,
		`(?m)^  produced 1000 sample messages into app/logs \(4 partitions\) +\d+\.\ds$`,
		`(?m)^ready in \d+\.\ds(?: \(builds and installs \d+\.\ds, servers \d+\.\ds\))?;`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("make local printed no line matching %s", re)
		}
	}
	if strings.Contains(strings.ToLower(out), "minio") {
		t.Errorf("make local mentions MinIO, which it should neither build nor start unless LOCAL_S3=minio")
	}
}

// checkLocalOutput: the checks passed, every partition got objects and a
// clean audit, and the README's sample lines are what the commands printed.
func checkLocalOutput(t *testing.T, readme, out string) {
	t.Helper()
	for _, want := range []string{"ok    iggy", "ok    s3 write", "ok    state table", "STREAM/TOPIC"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for p := 0; p < 4; p++ {
		re := regexp.MustCompile(fmt.Sprintf(`ok   app/logs partition %d: 2 objects, 200 messages, \d+ bytes, offsets 0\.\.199, 0 gap markers, committed 199`, p))
		if !re.MatchString(out) {
			t.Errorf("no clean audit line with objects for partition %d", p)
		}
	}
	checkREADMESamples(t, readme, out)
	if t.Failed() {
		t.Logf("commands' output:\n%s", out)
	}
}

// localTestingBlocks returns the sh blocks between the local-testing markers.
func localTestingBlocks(t *testing.T, readme string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "<!-- local-testing:begin -->")
	section, _, ok2 := strings.Cut(rest, "<!-- local-testing:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- local-testing:begin/end --> section")
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) != 2 || !strings.Contains(blocks[0], "make local") {
		t.Fatalf("want two sh blocks in Local testing, the first running make local; got %q", blocks)
	}
	return blocks
}

// checkREADMESamples: the sample lines the README shows after the blocks
// are lines the commands printed (byte counts aside).
func checkREADMESamples(t *testing.T, readme, out string) {
	t.Helper()
	_, after, _ := strings.Cut(readme, "<!-- local-testing:end -->")
	section, _, _ := strings.Cut(after, "\n## ")
	samples := regexp.MustCompile("(?s)```\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(samples) < 2 {
		t.Fatalf("the Local testing section shows %d sample outputs, want the pending line and the audit line", len(samples))
	}
	// Byte counts and ages vary; the pending line's age parts appear once the
	// run reports when the first pending message arrived (PendingSince).
	for _, s := range samples {
		line := strings.TrimSpace(s[1])
		pattern := regexp.QuoteMeta(line)
		pattern = regexp.MustCompile(`\d+ bytes`).ReplaceAllString(pattern, `\d+ bytes`)
		pattern = regexp.MustCompile(`first is \S+ old; `).ReplaceAllString(pattern, `(?:first is \S+ old; )?`)
		pattern = regexp.MustCompile(` \\\(in \S+\\\)`).ReplaceAllString(pattern, `(?: \(in \S+\))?`)
		re := regexp.MustCompile(pattern)
		if !re.MatchString(out) {
			t.Errorf("the README shows %q, which the commands did not print", line)
		}
	}
}

// cleanCheckout copies what a commit of the working tree holds (tracked
// files and new ones git does not ignore: no local.env, .aws-sam, .bin) to
// a temporary directory. Its .bin/ links to the tools already built, one
// entry at a time, so that make writes only inside the copy; the files get
// an old time so that make finds those tools up to date and rebuilds none
// (a rebuild would write through the link).
func cleanCheckout(t *testing.T, root string) string {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dir := t.TempDir()
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, rel := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		if rel == ".bin" || strings.HasPrefix(rel, ".bin/") {
			continue
		}
		src := filepath.Join(root, rel)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		dst := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, src, dst, fi.Mode())
		if err := os.Chtimes(dst, old, old); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, ".bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, ".bin"))
	for _, e := range entries {
		if e.Name() == "poller" {
			continue // make local builds its own
		}
		if err := os.Symlink(filepath.Join(root, ".bin", e.Name()), filepath.Join(bin, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// freshShellEnv is this process's environment without the variables the
// README's commands set or read, as in a new terminal.
func freshShellEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SINK_") || strings.HasPrefix(name, "IGGY_") || strings.HasPrefix(name, "AWS_") || name == "LOG_LEVEL" || name == "LOG_FORMAT" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func waitForOutput(t *testing.T, out *testenv.LockedBuffer, exited <-chan error, want string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for !strings.Contains(out.String(), want) {
		select {
		case err := <-exited:
			t.Fatalf("make local exited (%v) before printing %q:\n%s", err, want, out.String())
		case <-deadline:
			t.Fatalf("make local did not print %q within %s:\n%s", want, d, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readyLine(out string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "ready in ") {
			return strings.TrimSpace(sc.Text())
		}
	}
	return ""
}

// envAddrs returns the host:port of every server local.env names.
func envAddrs(env string) []string {
	var addrs []string
	for _, m := range regexp.MustCompile(`(?m)^export (?:AWS_ENDPOINT_URL_S3|AWS_ENDPOINT_URL_DYNAMODB|IGGY_ADDRESS)=(?:http://)?(\S+)$`).FindAllStringSubmatch(env, -1) {
		addrs = append(addrs, m[1])
	}
	return addrs
}

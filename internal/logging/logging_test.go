package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "TRACE": slog.LevelDebug, "INFO": slog.LevelInfo, "": slog.LevelInfo,
		"Warn": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError, "loud": slog.LevelInfo,
	} {
		if got := Level(in); got != want {
			t.Errorf("Level(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestCaptureStdlib(t *testing.T) {
	var buf bytes.Buffer
	CaptureStdlib(New(&buf, "debug", "json"))
	defer log.SetOutput(new(bytes.Buffer))
	log.Printf("Checking cluster metadata for leader detection")
	log.Printf("[WARN] heartbeat failed: broken pipe")
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["level"] != "DEBUG" || lines[1]["level"] != "WARN" || lines[1]["msg"] != "heartbeat failed: broken pipe" {
		t.Fatalf("captured %v", lines)
	}
}

func TestRound(t *testing.T) {
	for in, want := range map[time.Duration]string{
		1013102874 * time.Nanosecond:           "1.01s",
		999 * time.Nanosecond:                  "999ns",
		1234567 * time.Nanosecond:              "1.23ms",
		5 * time.Minute:                        "5m0s",
		3*time.Minute + 21400*time.Millisecond: "3m21s",
		-1500 * time.Millisecond:               "-1.5s",
	} {
		if got := Round(in).String(); got != want {
			t.Errorf("Round(%d) = %s, want %s", in, got, want)
		}
	}
}

func TestDurationsAreText(t *testing.T) {
	for _, format := range []string{"json", "text", "human"} {
		var buf bytes.Buffer
		New(&buf, "info", format).Info("retrying", "delay", 1013102874*time.Nanosecond)
		if !strings.Contains(buf.String(), "1.01s") || strings.Contains(buf.String(), "1013102874") {
			t.Errorf("%s: %s", format, buf.String())
		}
	}
}

func TestHumanFormat(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, "debug", "human").With("run", 3).WithGroup("p")
	l.Warn("upload slow", "key", "a b", "bytes", 42, slog.Group("s3", "status", 503), "list", []string{"x", "y"}, "err", errors.New("boom"))
	line := buf.String()
	// 21:14:15.123 WARN  upload slow run=3 p.key="a b" p.bytes=42 p.s3.status=503 p.list=["x","y"] p.err=boom
	re := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d\d\d WARN  upload slow run=3 p\.key="a b" p\.bytes=42 p\.s3\.status=503 p\.list=\["x","y"\] p\.err=boom\n$`)
	if !re.MatchString(line) {
		t.Fatalf("human line %q", line)
	}
	buf.Reset()
	New(&buf, "info", "human").Debug("hidden")
	if buf.Len() != 0 {
		t.Fatalf("debug line written at info: %q", buf.String())
	}
}

func TestAutoIsJSONWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	New(&buf, "info", "auto").Info("hello")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["msg"] != "hello" {
		t.Fatalf("auto on a buffer: %q", buf.String())
	}
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a regular file counts as a terminal")
	}
}

func TestAtLevel(t *testing.T) {
	var buf bytes.Buffer
	base := New(&buf, "info", "json")
	AtLevel(base, slog.LevelDebug).Info("idle run")
	if buf.Len() != 0 {
		t.Fatalf("lowered record written at info: %s", buf.String())
	}
	AtLevel(base, slog.LevelWarn).Info("raised")
	if !strings.Contains(buf.String(), `"level":"WARN"`) {
		t.Fatalf("raised record: %s", buf.String())
	}
}

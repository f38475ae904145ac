package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"testing"
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

// TestURLCredentialsRedacted (issue 15 item 9): userinfo in a URL is
// redacted in messages, string attributes, errors and grouped attributes.
func TestURLCredentialsRedacted(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		l := New(&buf, "debug", format)
		l.Info("dial http://u:SECRET1@h:1 failed", "endpoint", "http://u:SECRET2@h:9000",
			"error", fmt.Errorf("put: %w", errors.New(`Put "http://u:SECRET3@h/b/k": refused`)))
		l.With("cfg", "s3://SECRET4@bucket").WithGroup("g").Warn("x", "url", "https://SECRET5@r2.example")
		out := buf.String()
		for _, s := range []string{"SECRET1", "SECRET2", "SECRET3", "SECRET4", "SECRET5"} {
			if strings.Contains(out, s) {
				t.Errorf("%s log shows %s:\n%s", format, s, out)
			}
		}
		if strings.Count(out, "[redacted]@") != 5 {
			t.Errorf("%s log: want 5 redacted URLs:\n%s", format, out)
		}
	}
}

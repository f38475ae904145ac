package logging

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
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

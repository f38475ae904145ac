// Package logging builds the sink's log/slog JSON loggers and routes the
// Iggy SDK's standard-library log lines into them.
package logging

import (
	"io"
	"log"
	"log/slog"
	"strings"
)

// New returns a logger writing to w at level ("debug", "info", "warn",
// "error"; Lambda's "TRACE" and "FATAL" too), as JSON unless format is "text".
func New(w io.Writer, level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: Level(level)}
	if strings.EqualFold(format, "text") {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// Level parses a level name; anything unknown is info.
func Level(s string) slog.Level {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE", "DEBUG":
		return slog.LevelDebug
	case "WARN", "WARNING":
		return slog.LevelWarn
	case "ERROR", "FATAL":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// CaptureStdlib sends the standard logger's output to l. The Iggy SDK
// v0.8.0 logs its leader-detection chatter there on every login (debug
// here), and heartbeat failures with a "[WARN]" prefix (warn here).
func CaptureStdlib(l *slog.Logger) {
	log.SetFlags(0)
	log.SetOutput(stdlibWriter{l})
}

type stdlibWriter struct{ l *slog.Logger }

func (w stdlibWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelDebug
	if rest, ok := strings.CutPrefix(msg, "[WARN]"); ok {
		msg, level = strings.TrimSpace(rest), slog.LevelWarn
	}
	w.l.Log(nil, level, msg, "source", "iggy-sdk")
	return len(p), nil
}

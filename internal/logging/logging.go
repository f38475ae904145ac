// Package logging builds the sink's log/slog loggers (JSON, key=value text, or
// a human format for terminals) and routes the Iggy SDK's standard-library log lines into them.
package logging

import (
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Formats New accepts. FormatAuto picks FormatHuman when the writer is a
// terminal and FormatJSON otherwise.
const (
	FormatAuto  = "auto"
	FormatJSON  = "json"
	FormatText  = "text"
	FormatHuman = "human"
)

// New returns a logger writing to w at level ("debug", "info", "warn",
// "error"; Lambda's "TRACE" and "FATAL" too) in format: "json" (also
// Lambda's "JSON" and anything unknown), "text" (slog's key=value),
// "human" (time, level, message, then key=value, for a person at a
// terminal) or "auto" (human on a terminal, else JSON). Durations are
// written as Go durations rounded to three significant digits ("1.01s").
func New(w io.Writer, level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: Level(level), ReplaceAttr: ReplaceAttr}
	switch strings.ToLower(strings.TrimSpace(format)) {
	case FormatText:
		return slog.New(slog.NewTextHandler(w, opts))
	case FormatHuman:
		return slog.New(NewHumanHandler(w, opts))
	case FormatAuto:
		if IsTerminal(w) {
			return slog.New(NewHumanHandler(w, opts))
		}
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// IsTerminal reports whether w is a character device such as a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
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

// ReplaceAttr writes duration values as text rounded to three significant
// digits: "1.01s", "250ms", "5m0s", rather than a count of nanoseconds.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(Round(a.Value.Duration()).String())
	}
	return a
}

// Round rounds d to three significant digits (1013102874ns -> 1.01s).
func Round(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for a := max(d, -d); a >= 1000; a /= 10 {
		unit *= 10
	}
	return d.Round(unit)
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

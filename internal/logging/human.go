package logging

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// HumanHandler writes one line per record for a person at a terminal:
//
//	14:02:31.415 INFO  run finished objects=8 messages=800 duration=1.01s
//
// Strings are quoted only when they need it; structured values (slices,
// structs) are written as compact JSON.
type HumanHandler struct {
	w      io.Writer
	mu     *sync.Mutex
	opts   slog.HandlerOptions
	prefix string // rendered attributes from WithAttrs
	group  string // dotted group prefix for later attributes
}

// NewHumanHandler returns a HumanHandler writing to w.
func NewHumanHandler(w io.Writer, opts *slog.HandlerOptions) *HumanHandler {
	h := &HumanHandler{w: w, mu: &sync.Mutex{}}
	if opts != nil {
		h.opts = *opts
	}
	return h
}

// Enabled reports whether level is at or above the handler's level.
func (h *HumanHandler) Enabled(_ context.Context, level slog.Level) bool {
	min := slog.LevelInfo
	if h.opts.Level != nil {
		min = h.opts.Level.Level()
	}
	return level >= min
}

// Handle writes the record as one line.
func (h *HumanHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if !r.Time.IsZero() {
		b.WriteString(r.Time.Format("15:04:05.000"))
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "%-5s %s", r.Level.String(), r.Message)
	b.WriteString(h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		h.appendAttr(&b, h.group, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns a handler that adds attrs to every line.
func (h *HumanHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		c.appendAttr(&b, h.group, a)
	}
	c.prefix = b.String()
	return &c
}

// WithGroup returns a handler that qualifies later attributes with name.
func (h *HumanHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

func (h *HumanHandler) appendAttr(b *strings.Builder, group string, a slog.Attr) {
	if h.opts.ReplaceAttr != nil && a.Value.Kind() != slog.KindGroup {
		a = h.opts.ReplaceAttr(strings.Split(strings.TrimSuffix(group, "."), "."), a)
	}
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			h.appendAttr(b, g, ga)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(group)
	b.WriteString(a.Key)
	b.WriteByte('=')
	b.WriteString(humanValue(a.Value))
}

func humanValue(v slog.Value) string {
	switch v.Kind() {
	case slog.KindString:
		return quoteIfNeeded(v.String())
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindDuration:
		return Round(v.Duration()).String()
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return quoteIfNeeded(x.Error())
		case fmt.Stringer:
			return quoteIfNeeded(x.String())
		case []byte:
			return quoteIfNeeded(string(x))
		default:
			if j, err := json.Marshal(x); err == nil {
				return string(j)
			}
			return quoteIfNeeded(fmt.Sprint(x))
		}
	default:
		return v.String()
	}
}

func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// AtLevel returns a logger that writes every record of l at level instead
// of its own: the poller logs idle runs' summaries at debug this way.
func AtLevel(l *slog.Logger, level slog.Level) *slog.Logger {
	return slog.New(levelHandler{l.Handler(), level})
}

type levelHandler struct {
	h     slog.Handler
	level slog.Level
}

func (l levelHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return l.h.Enabled(ctx, l.level)
}

func (l levelHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = l.level
	return l.h.Handle(ctx, r)
}

func (l levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{l.h.WithAttrs(attrs), l.level}
}

func (l levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{l.h.WithGroup(name), l.level}
}

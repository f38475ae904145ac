package config

import (
	"fmt"
	"strings"
)

// Error is a configuration error: which option, where it came from, the bad
// value (never for secrets) and what is accepted.
type Error struct {
	File    string // configuration file, when the value came from it
	Key     string // TOML key, e.g. "plugin_config.max_file_size" or "streams[1].topics"
	Env     string // environment variable for the option, if any
	FromEnv bool   // the value came from Env rather than the file
	Value   string // the value as written (quoted for strings); empty for secrets and missing values
	Reason  string // what is wrong and what is accepted
	Err     error  // underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.File != "" && !e.FromEnv {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	switch {
	case e.FromEnv:
		b.WriteString(e.Env)
		if e.Key != "" {
			b.WriteString(" (" + e.Key + ")")
		}
	default:
		b.WriteString(e.Key)
		if e.Env != "" {
			b.WriteString(" (env " + e.Env + ")")
		}
	}
	if e.Value != "" {
		b.WriteString(" = ")
		b.WriteString(e.Value)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// MissingError reports several required settings missing at once.
type MissingError struct {
	File    string   // configuration file, if any
	Missing []*Error // one per setting, in the order of the option table
}

func (e *MissingError) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	fmt.Fprintf(&b, "%d required settings are missing (set each in the file or by its environment variable):", len(e.Missing))
	for _, m := range e.Missing {
		b.WriteString("\n  - ")
		b.WriteString(strings.TrimPrefix(m.Error(), "config: "+prefixOf(m)))
	}
	return b.String()
}

// prefixOf is the file part Error.Error writes before the key.
func prefixOf(e *Error) string {
	if e.File != "" && !e.FromEnv {
		return e.File + ": "
	}
	return ""
}

// Unwrap gives each missing setting's *Error to errors.As and errors.Is.
func (e *MissingError) Unwrap() []error {
	out := make([]error, len(e.Missing))
	for i, m := range e.Missing {
		out[i] = m
	}
	return out
}

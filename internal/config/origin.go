package config

import "time"

// Source says where an effective value came from.
type Source string

// The sources of a value, in increasing precedence: an environment variable
// that is set and not empty wins over the file.
const (
	SourceDefault Source = "default"
	SourceFile    Source = "file"
	SourceEnv     Source = "environment"
)

// Setting is one effective value and where it came from.
type Setting struct {
	Key    string // TOML key: "plugin_config.prefix", "streams[0].topics"
	Value  string // as String shows it: strings quoted, secrets masked, URLs without userinfo
	Source Source
	Var    string // the environment variable, when Source is SourceEnv
}

// Replacement is a value of the configuration file that an environment
// variable replaced. Values are shown as in Setting (secrets masked).
type Replacement struct {
	Key  string `json:"key"`
	Var  string `json:"variable"`
	File string `json:"file"`
	Env  string `json:"environment"`
}

// origin remembers where each value of a loaded Config came from.
type origin struct {
	file string
	set  map[string]source
	vars map[string]string
}

// File is where the configuration file was read from ("" = none).
func (c *Config) File() string { return c.origin.file }

// Effective lists every option's value with its source, in the order of
// the option table, then each [[streams]] entry's options.
func (c *Config) Effective() []Setting {
	var out []Setting
	c.eachOption(func(key string, o *option, s *Stream) {
		st := Setting{Key: key, Value: o.shown(formatValue(o.ptr(c, s))), Source: SourceDefault}
		switch c.origin.set[key] {
		case fromFile:
			st.Source = SourceFile
		case fromEnv:
			st.Source, st.Var = SourceEnv, c.origin.vars[key]
		}
		out = append(out, st)
	})
	return out
}

// rawValue is an option field's value for comparison: secrets in clear.
func rawValue(p any) string {
	switch v := p.(type) {
	case *Secret:
		return v.Reveal()
	case *time.Duration:
		return v.String()
	}
	return formatValue(p)
}

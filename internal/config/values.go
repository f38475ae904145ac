package config

import (
	"fmt"
	"strconv"
	"strings"
)

// valueKeys are the options only a path_template with payload fields uses.
var valueKeys = []string{"max_partition_values", "default_partition_name"}

// checkValues checks a path_template's payload fields against the rest:
// they are read from JSON payloads (schema = "json", after transforms),
// and their options mean nothing without them.
func (l *loader) checkValues() error {
	c := l.cfg
	p := &c.Plugin
	if p.Template == nil || !p.Template.HasValues() {
		for _, k := range valueKeys {
			if _, set := l.set["plugin_config."+k]; set {
				return l.errorFor("plugin_config."+k, "only used with a {payload.<path>} placeholder in path_template")
			}
		}
		return nil
	}
	for i, s := range c.Streams {
		if s.Schema != SchemaJSON {
			e := l.errorFor(fmt.Sprintf("streams[%d].schema", i), fmt.Sprintf(`must be "json" with {payload.<path>} in path_template (it is %q): the folders are fields of JSON payloads`, s.Schema))
			e.Value = strconv.Quote(string(s.Schema))
			return e
		}
	}
	return nil
}

// PayloadColumns are the payload fields path_template splits objects by,
// as the dotted paths of their columns ({payload.user.tier} is
// "user.tier"); nil without any.
func (p *Plugin) PayloadColumns() []string {
	if p.Template == nil {
		return nil
	}
	var out []string
	for _, f := range p.Template.PayloadFields() {
		out = append(out, strings.Join(f, "."))
	}
	return out
}

package config

import (
	"fmt"
	"strconv"
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
	if p.TableFormat == TableIceberg {
		return l.errorFor("plugin_config.path_template", `{payload.<path>} cannot be used with table_format = "iceberg" yet: the table's partition spec does not have the field (use a path_template without it, or table_format = "none")`)
	}
	return nil
}

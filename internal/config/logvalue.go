package config

import (
	"fmt"
	"log/slog"
	"reflect"
	"time"
)

// LogValue makes a Config a short, structured log attribute: the options
// that differ from their defaults (secrets masked), the transforms in order
// and the ignored upstream keys. String lists every option.
func (c *Config) LogValue() slog.Value {
	def := defaults()
	var attrs []slog.Attr
	for _, o := range options {
		if o.table == "streams" {
			continue
		}
		if !same(o.ptr(c, nil), o.ptr(def.cfg, nil)) {
			attrs = append(attrs, attrOf(o.Key, o.ptr(c, nil)))
		}
	}
	ds := def.newStream()
	for i := range c.Streams {
		for _, o := range options {
			if o.table != "streams" {
				continue
			}
			if !same(o.ptr(c, &c.Streams[i]), o.ptr(def.cfg, &ds)) {
				attrs = append(attrs, attrOf(fmt.Sprintf("streams[%d].%s", i, o.name), o.ptr(c, &c.Streams[i])))
			}
		}
	}
	if len(c.Transforms) > 0 {
		types := make([]string, len(c.Transforms))
		for i, t := range c.Transforms {
			types[i] = t.Type
		}
		attrs = append(attrs, slog.Any("transforms", types))
	}
	if len(c.Ignored) > 0 {
		attrs = append(attrs, slog.Any("ignored", c.Ignored))
	}
	return slog.GroupValue(attrs...)
}

// defaults is a loader holding a configuration with every default applied.
func defaults() *loader {
	l := &loader{cfg: &Config{}, set: map[string]source{}}
	for _, o := range options {
		if o.table != "streams" {
			l.applyDefault(o, nil)
		}
	}
	return l
}

// same compares two option fields' values (secrets by their real text,
// so that a changed password shows, masked).
func same(a, b any) bool {
	return reflect.DeepEqual(reflect.ValueOf(a).Elem().Interface(), reflect.ValueOf(b).Elem().Interface())
}

// attrOf is one option's value as a typed attribute (secrets masked).
func attrOf(key string, p any) slog.Attr {
	switch v := p.(type) {
	case *string:
		return slog.String(key, *v)
	case *Secret:
		return slog.String(key, v.mask())
	case *bool:
		return slog.Bool(key, *v)
	case *int:
		return slog.Int(key, *v)
	case *int64:
		return slog.Int64(key, *v)
	case *uint32:
		return slog.Uint64(key, uint64(*v))
	case *uint64:
		return slog.Uint64(key, *v)
	case *time.Duration:
		return slog.Duration(key, *v)
	case *[]string:
		return slog.Any(key, *v)
	}
	return slog.String(key, formatValue(p))
}

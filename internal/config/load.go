package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/editdist"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggyref"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/redact"
)

// shown is how a value of o may appear in a message: URLs lose their userinfo.
func (o *option) shown(v string) string {
	if o.url {
		return redact.URL(v)
	}
	return v
}

// upstreamRuntimeKeys are top-level keys only the upstream connector runtime
// acts on; they are accepted so that upstream files load unchanged.
var upstreamRuntimeKeys = []string{"path", "plugin_config_format", "benchmark"}

// upstreamStreamKeys are [[streams]] keys for upstream's Avro decoder, which
// this sink does not have (avro payloads are kept as base64).
var upstreamStreamKeys = []string{"avro_schema_json", "avro_schema_path"}

var secretKeyNames = []string{"secret_access_key", "password", "token"}

// Load reads the TOML file at path ("" = no file), applies the environment
// over it and validates the result. env is usually os.LookupEnv; nil means an
// empty environment.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	var data []byte
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: read configuration file: %w", err)
		}
		data = b
	}
	return load(data, path != "", path, env)
}

// FromEnv loads the file named by SINK_CONFIG, if set, then the environment.
func FromEnv(env func(string) (string, bool)) (*Config, error) {
	var path string
	if env != nil {
		path, _ = env("SINK_CONFIG")
	}
	return Load(strings.TrimSpace(path), env)
}

type source uint8

const (
	fromFile source = iota + 1
	fromEnv
)

type loader struct {
	cfg  *Config
	file string
	env  func(string) (string, bool)
	set  map[string]source // option keys ("plugin_config.bucket", "streams[1].topics") given explicitly
	vars map[string]string // option key -> the environment variable that set it
}

func load(data []byte, hasFile bool, file string, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	l := &loader{cfg: &Config{}, file: file, env: env, set: map[string]source{}, vars: map[string]string{}}
	for _, o := range options {
		if o.table != "streams" {
			l.applyDefault(o, nil)
		}
	}
	if hasFile {
		if err := l.loadFile(data); err != nil {
			return nil, err
		}
	}
	if err := l.loadEnv(); err != nil {
		return nil, err
	}
	if err := l.finish(); err != nil {
		return nil, err
	}
	l.cfg.origin = origin{file: file, set: l.set, vars: l.vars}
	return l.cfg, nil
}

func (l *loader) applyDefault(o *option, s *Stream) {
	if o.Default == "" || o.computed {
		return
	}
	if err := o.setEnv(l.cfg, s, o.Default); err != nil {
		panic(fmt.Sprintf("config: default of %s: %v", o.Key, err))
	}
	if o.fix != nil {
		if err := o.fix(l.cfg, s); err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", o.Key, err))
		}
	}
}

func (l *loader) newStream() Stream {
	var s Stream
	for _, o := range options {
		if o.table == "streams" {
			l.applyDefault(o, &s)
		}
	}
	return s
}

func findOption(table, name string) *option {
	for _, o := range options {
		if o.table == table && (o.name == name || (o.alias != "" && o.alias == name)) {
			return o
		}
	}
	return nil
}

func tableKeys(table string) []string {
	var names []string
	for _, o := range options {
		if o.table == table {
			names = append(names, o.name)
			if o.alias != "" {
				names = append(names, o.alias)
			}
		}
	}
	switch table {
	case "":
		names = append(names, "streams", "plugin_config", "iggy", "transforms")
		names = append(names, upstreamRuntimeKeys...)
	case "streams":
		names = append(names, upstreamStreamKeys...)
	}
	return names
}

func (l *loader) loadFile(data []byte) error {
	var raw map[string]any
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return l.syntaxError(err)
	}
	pos := map[string]int{}
	for i, k := range md.Keys() {
		if _, ok := pos[k.String()]; !ok {
			pos[k.String()] = i
		}
	}
	for _, k := range orderedKeys(raw, "", pos) {
		v := raw[k]
		var err error
		switch {
		case k == "streams":
			err = l.fileStreams(v, pos)
		case k == "plugin_config" || k == "iggy":
			err = l.fileTable(k, v, pos)
		case k == "transforms":
			err = l.fileTransforms(v, md)
		case slices.Contains(upstreamRuntimeKeys, k):
			l.cfg.Ignored = append(l.cfg.Ignored, k)
		default:
			o := findOption("", k)
			if o == nil {
				return l.unknownKey("", k, k)
			}
			err = l.setFile(o, nil, k, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// syntaxError reports a TOML syntax error without echoing a secret's value.
func (l *loader) syntaxError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		last := pe.LastKey[strings.LastIndexByte(pe.LastKey, '.')+1:]
		if slices.Contains(secretKeyNames, last) {
			return &Error{File: l.file, Key: pe.LastKey,
				Reason: fmt.Sprintf("TOML syntax error on line %d (details hidden because the value is a secret); strings need double quotes", pe.Position.Line)}
		}
	}
	name := l.file
	if name == "" {
		name = "TOML"
	}
	return fmt.Errorf("config: %s: %w", name, err)
}

// orderedKeys returns m's keys in file order (MetaData.Keys order), unknown positions last by name.
func orderedKeys(m map[string]any, prefix string, pos map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	at := func(k string) int {
		path := toml.Key{k}
		if prefix != "" {
			path = toml.Key{prefix, k}
		}
		if p, ok := pos[path.String()]; ok {
			return p
		}
		return math.MaxInt
	}
	slices.SortFunc(ks, func(a, b string) int {
		if pa, pb := at(a), at(b); pa != pb {
			if pa < pb {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return ks
}

func (l *loader) fileTable(table string, v any, pos map[string]int) error {
	m, ok := v.(map[string]any)
	if !ok {
		return &Error{File: l.file, Key: table, Reason: fmt.Sprintf("expected a table [%s], got %s", table, tomlType(v))}
	}
	for _, k := range orderedKeys(m, table, pos) {
		o := findOption(table, k)
		if o == nil {
			return l.unknownKey(table, k, table+"."+k)
		}
		if o.alias != "" {
			if _, both := m[o.name]; both && k == o.alias {
				return &Error{File: l.file, Key: table + "." + o.alias, Env: o.Env,
					Reason: fmt.Sprintf("%s is an alias of %s; set only one of them", o.alias, o.name)}
			}
		}
		if err := l.setFile(o, nil, o.Key, m[k]); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) fileStreams(v any, pos map[string]int) error {
	var elems []map[string]any
	switch x := v.(type) {
	case []map[string]any:
		elems = x
	case []any:
		for _, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return &Error{File: l.file, Key: "streams", Reason: "expected [[streams]] tables, got an array element of type " + tomlType(e)}
			}
			elems = append(elems, m)
		}
	default:
		return &Error{File: l.file, Key: "streams", Reason: "expected [[streams]] (an array of tables), got " + tomlType(v)}
	}
	for i, m := range elems {
		s := l.newStream()
		for _, k := range orderedKeys(m, "streams", pos) {
			key := fmt.Sprintf("streams[%d].%s", i, k)
			if slices.Contains(upstreamStreamKeys, k) {
				l.cfg.Ignored = append(l.cfg.Ignored, key)
				continue
			}
			o := findOption("streams", k)
			if o == nil {
				return l.unknownKey("streams", k, key)
			}
			if err := l.setFile(o, &s, key, m[k]); err != nil {
				return err
			}
		}
		l.cfg.Streams = append(l.cfg.Streams, s)
	}
	return nil
}

func (l *loader) fileTransforms(v any, md toml.MetaData) error {
	m, ok := v.(map[string]any)
	if !ok {
		return &Error{File: l.file, Key: "transforms", Reason: "expected [transforms.<type>] tables, got " + tomlType(v)}
	}
	var order []string
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == "transforms" && !slices.Contains(order, k[1]) {
			if _, ok := m[k[1]]; ok {
				order = append(order, k[1])
			}
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range append(order, rest...) {
		t, ok := m[k].(map[string]any)
		if !ok {
			return &Error{File: l.file, Key: "transforms." + k, Reason: "expected a table [transforms." + k + "], got " + tomlType(m[k])}
		}
		l.cfg.Transforms = append(l.cfg.Transforms, TransformTable{Type: k, Table: t})
	}
	return nil
}

func (l *loader) unknownKey(table, name, key string) error {
	where := "at the top level"
	switch table {
	case "":
	case "streams":
		where = "in [[streams]]"
	default:
		where = "in [" + table + "]"
	}
	return &Error{File: l.file, Key: key,
		Reason: fmt.Sprintf("unknown key %q %s; did you mean %q? (unknown keys are refused so that typos are not silently ignored)",
			name, where, editdist.Closest(name, tableKeys(table)))}
}

func (l *loader) setFile(o *option, s *Stream, key string, v any) error {
	err := o.setTOML(l.cfg, s, v)
	if err == nil && o.fix != nil {
		err = o.fix(l.cfg, s)
	}
	if err != nil {
		e := &Error{File: l.file, Key: key, Env: o.Env, Reason: err.Error(), Err: err}
		if o.table == "streams" && !strings.HasPrefix(key, "streams[0].") {
			e.Env = "" // the SINK_* stream variables set streams[0] only
		}
		if !o.secret() {
			e.Value = o.shown(tomlValue(v))
		}
		return e
	}
	l.set[key] = fromFile
	return nil
}

func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = tomlValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any, []map[string]any:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

func (l *loader) loadEnv() error {
	c := l.cfg
	for _, o := range options {
		if o.Env == "" {
			continue
		}
		name := o.Env
		v, ok := l.env(name)
		if o.alias != "" {
			aliasEnv := "SINK_" + strings.ToUpper(o.alias)
			if av, aok := l.env(aliasEnv); aok && av != "" {
				if ok && v != "" {
					return &Error{Key: o.Key, Env: aliasEnv, FromEnv: true,
						Reason: fmt.Sprintf("%s is an alias of %s; set only one of them", aliasEnv, o.Env)}
				}
				name, v, ok = aliasEnv, av, aok
			}
		}
		if !ok || v == "" { // empty means unset: a template declares every variable it may pass
			continue
		}
		var s *Stream
		key := o.Key
		if o.table == "streams" {
			if len(c.Streams) == 0 {
				c.Streams = append(c.Streams, l.newStream())
			}
			s = &c.Streams[0]
			key = "streams[0]." + o.name
		}
		// A file value the variable replaces is reported (Config.Replaced).
		replacing := l.set[key] == fromFile
		var fileRaw, fileShown string
		if replacing {
			fileRaw, fileShown = rawValue(o.ptr(c, s)), o.shown(formatValue(o.ptr(c, s)))
		}
		err := o.setEnv(c, s, v)
		if err == nil && o.fix != nil {
			err = o.fix(c, s)
		}
		if err != nil {
			e := &Error{Key: key, Env: name, FromEnv: true, Reason: err.Error(), Err: err}
			if !o.secret() {
				e.Value = o.shown(strconv.Quote(v))
			}
			return e
		}
		if replacing && rawValue(o.ptr(c, s)) != fileRaw {
			c.Replaced = append(c.Replaced, Replacement{Key: key, Var: name, File: fileShown, Env: o.shown(formatValue(o.ptr(c, s)))})
		}
		l.set[key] = fromEnv
		l.vars[key] = name
	}
	return nil
}

// errorFor builds an Error about option key (no value), naming the source it was set from.
func (l *loader) errorFor(key, reason string) *Error {
	e := &Error{Key: key, Reason: reason}
	name := key
	if i := strings.Index(key, "]."); i >= 0 {
		name = "streams." + key[i+2:]
	}
	for _, o := range options {
		if o.Key == name {
			e.Env = o.Env
		}
	}
	if strings.HasPrefix(key, "streams[") && !strings.HasPrefix(key, "streams[0]") {
		e.Env = ""
	}
	if l.set[key] == fromEnv {
		e.FromEnv = true
	} else {
		e.File = l.file
	}
	return e
}

// finish derives computed defaults and checks rules that span options.
func (l *loader) finish() error {
	c := l.cfg
	p := &c.Plugin
	for _, name := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		if v, ok := l.env(name); ok && strings.TrimSpace(v) != "" {
			c.ServicesRegion = strings.TrimSpace(v)
			if p.Region == "" {
				p.Region = c.ServicesRegion
				l.set["plugin_config.region"], l.vars["plugin_config.region"] = fromEnv, name
			}
			break
		}
	}
	if c.ServicesRegion == "" {
		c.ServicesRegion = p.Region
	}
	if err := l.checkRequired(); err != nil {
		return err
	}
	if err := l.checkRegion(); err != nil {
		return err
	}
	if (p.AccessKeyID == "") != (p.SecretAccessKey == "") {
		missing, given := "plugin_config.secret_access_key", "plugin_config.access_key_id"
		if p.AccessKeyID == "" {
			missing, given = given, missing
		}
		return l.errorFor(missing, fmt.Sprintf("%s is set but %s is not: give both, or omit both to use the default AWS credential chain", given, missing))
	}
	if p.SSEKMSKeyID != "" && p.ServerSideEncryption != "aws:kms" {
		e := l.errorFor("plugin_config.sse_kms_key_id", fmt.Sprintf(`only valid with server_side_encryption = "aws:kms" (it is %q)`, p.ServerSideEncryption))
		e.Value = strconv.Quote(p.SSEKMSKeyID)
		return e
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 1 // upstream: zero attempts still makes one
	}
	if !c.Iggy.TLSEnabled {
		for _, kv := range [][2]string{{"iggy.tls_ca_file", c.Iggy.TLSCAFile}, {"iggy.tls_domain", c.Iggy.TLSDomain}} {
			if key, v := kv[0], kv[1]; v != "" {
				e := l.errorFor(key, "only used with TLS: set iggy.tls_enabled = true (IGGY_TLS_ENABLED=true) or remove it")
				e.Value = strconv.Quote(v)
				return e
			}
		}
	}
	if p.DeadlineMargin >= p.RunTimeout {
		e := l.errorFor("plugin_config.deadline_margin", fmt.Sprintf("must be shorter than run_timeout (%s): a run stops starting objects when less than deadline_margin is left, so it would never write one", p.RunTimeout))
		e.Value = strconv.Quote(p.DeadlineMargin.String())
		return e
	}
	seen := map[[2]string]int{}
	for i := range c.Streams {
		s := &c.Streams[i]
		if s.ConsumerGroup == "" {
			s.ConsumerGroup = "iggy-connect-sink-" + c.Key
		}
		if r := iggyref.Parse(s.Stream); !r.ByID && r.Name == "" {
			return l.errorFor(fmt.Sprintf("streams[%d].stream", i), `"name:" must be followed by the stream's name`)
		}
		for _, t := range s.Topics {
			if r := iggyref.Parse(t); !r.ByID && r.Name == "" {
				e := l.errorFor(fmt.Sprintf("streams[%d].topics", i), `"name:" must be followed by the topic's name`)
				e.Value = strconv.Quote(t)
				return e
			}
			k := [2]string{refKey(s.Stream), refKey(t)}
			if j, dup := seen[k]; dup {
				e := l.errorFor(fmt.Sprintf("streams[%d].topics", i), fmt.Sprintf("stream %q topic %q is already drained by streams[%d]; list each topic once", s.Stream, t, j))
				e.Value = strconv.Quote(t)
				return e
			}
			seen[k] = i
		}
	}
	if err := l.checkKeysDistinct(seen); err != nil {
		return err
	}
	l.defaultForTables()
	if err := l.checkValues(); err != nil {
		return err
	}
	if err := l.checkParquet(); err != nil {
		return err
	}
	if err := l.checkIceberg(); err != nil {
		return err
	}
	return l.checkNamesDistinct()
}

// checkRequired reports every required setting that is missing, in one
// error: a first deployment should not find them one run at a time.
func (l *loader) checkRequired() error {
	c, p := l.cfg, &l.cfg.Plugin
	var missing []*Error
	if p.Bucket == "" {
		missing = append(missing, l.errorFor("plugin_config.bucket", "required: the S3 bucket to write to"))
	}
	if p.Region == "" {
		missing = append(missing, l.errorFor("plugin_config.region", `required: set it, or AWS_REGION (e.g. "us-east-1"; "auto" for R2)`))
	}
	if p.FileRotation == RotateByMessages && p.MaxMessagesPerFile == 0 {
		missing = append(missing, l.errorFor("plugin_config.max_messages_per_file", `required when file_rotation = "messages" (a number of records greater than 0)`))
	}
	if len(c.Streams) == 0 {
		missing = append(missing, &Error{File: l.file, Key: "streams", Env: "SINK_STREAM",
			Reason: "at least one [[streams]] entry with stream and topics is required (or set SINK_STREAM and SINK_TOPICS)"})
	}
	for i, s := range c.Streams {
		if s.Stream == "" {
			missing = append(missing, l.errorFor(fmt.Sprintf("streams[%d].stream", i), "required: the stream name or id to drain"))
		}
		if len(s.Topics) == 0 {
			missing = append(missing, l.errorFor(fmt.Sprintf("streams[%d].topics", i), `required: at least one topic, e.g. ["events"] (SINK_TOPICS=events,audit)`))
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return missing[0]
	}
	return &MissingError{File: l.file, Missing: missing}
}

// awsRegion is the shape of an AWS region's name: us-east-1, us-gov-west-1,
// cn-north-1, ap-southeast-5, us-isob-east-1, eusc-de-east-1.
var awsRegion = regexp.MustCompile(`^[a-z]{2,4}(-[a-z]+){1,2}-[0-9]{1,2}$`)

// checkRegion refuses a region that cannot be AWS's when the sink talks to
// AWS S3 (a typo such as "us-east1" would otherwise fail at the first DNS
// lookup); an S3-compatible store may call its region anything.
func (l *loader) checkRegion() error {
	p := &l.cfg.Plugin
	if p.Endpoint != "" || awsRegion.MatchString(p.Region) {
		return nil
	}
	for _, name := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if v, ok := l.env(name); ok && strings.TrimSpace(v) != "" {
			return nil
		}
	}
	reason := `not an AWS region's name (e.g. "us-east-1", "eu-west-1"); a store with its own endpoint (plugin_config.endpoint, AWS_ENDPOINT_URL_S3) may use any region`
	if s := suggestRegion(p.Region); s != "" && s != p.Region {
		reason = fmt.Sprintf("not an AWS region's name; did you mean %q? (a store with its own endpoint, plugin_config.endpoint or AWS_ENDPOINT_URL_S3, may use any region)", s)
	}
	e := l.errorFor("plugin_config.region", reason)
	if v := l.vars["plugin_config.region"]; v != "" {
		e.Env = v // AWS_REGION or AWS_DEFAULT_REGION when the region came from one
	}
	e.Value = strconv.Quote(p.Region)
	return e
}

// suggestRegion mends the usual slips in a region's name: case, spaces or
// underscores, and a missing '-' before the number ("us-east1").
func suggestRegion(r string) string {
	s := strings.ToLower(strings.TrimSpace(r))
	s = strings.NewReplacer("_", "-", " ", "-").Replace(s)
	if i := strings.IndexAny(s, "0123456789"); i > 0 && s[i-1] != '-' {
		s = s[:i] + "-" + s[i:]
	}
	if awsRegion.MatchString(s) {
		return s
	}
	return ""
}

// refKey identifies a configured stream or topic, so that "x" and "name:x"
// count as the same one (an id can only be compared after resolution).
func refKey(s string) string {
	r := iggyref.Parse(s)
	if r.ByID {
		return "\x00id " + strconv.FormatUint(uint64(r.ID), 10)
	}
	return r.Name
}

// checkNamesDistinct refuses two configured streams or topics whose names
// render to the same key segments ("orders v2" and "orders_v2"): their
// objects would overwrite each other. Values that are ids are checked after
// they are resolved, at the start of each run.
func (l *loader) checkNamesDistinct() error {
	var pairs []keys.Pair
	where := map[keys.Pair]int{}
	for i, s := range l.cfg.Streams {
		sr := iggyref.Parse(s.Stream)
		for _, t := range s.Topics {
			tr := iggyref.Parse(t)
			if sr.ByID || tr.ByID {
				continue
			}
			p := keys.Pair{Stream: sr.Name, Topic: tr.Name}
			if _, dup := where[p]; !dup {
				where[p] = i
				pairs = append(pairs, p)
			}
		}
	}
	if ce := l.cfg.Plugin.Template.Collision(pairs); ce != nil {
		key := fmt.Sprintf("streams[%d].topics", where[ce.B])
		if ce.A.Stream != ce.B.Stream {
			key = fmt.Sprintf("streams[%d].stream", where[ce.B])
		}
		return l.errorFor(key, ce.Error()+"; drain one of them with another sink (another prefix), or rename one")
	}
	return nil
}

// checkKeysDistinct refuses a path_template that would give objects of two
// configured topics the same names: the file name carries only partition and
// offsets, so one object would overwrite the other.
func (l *loader) checkKeysDistinct(pairs map[[2]string]int) error {
	streams, topics := map[string]bool{}, map[string]bool{}
	for k := range pairs {
		streams[k[0]], topics[k[1]] = true, true
	}
	tpl := l.cfg.Plugin.PathTemplate
	for _, need := range []struct {
		placeholder string
		names       map[string]bool
		what        string
	}{{"{stream}", streams, "streams"}, {"{topic}", topics, "topics"}} {
		if len(need.names) > 1 && !strings.Contains(tpl, need.placeholder) {
			e := l.errorFor("plugin_config.path_template", fmt.Sprintf("must contain %s when several %s are drained: object names carry only the partition and offsets, so their objects would overwrite each other", need.placeholder, need.what))
			e.Value = strconv.Quote(tpl)
			return e
		}
	}
	return nil
}

// eachOption calls f with every option's key, in the order of the option
// table, then each [[streams]] entry's options (s is nil for the others).
func (c *Config) eachOption(f func(key string, o *option, s *Stream)) {
	for _, o := range options {
		if o.table != "streams" {
			f(o.Key, o, nil)
		}
	}
	for i := range c.Streams {
		for _, o := range options {
			if o.table == "streams" {
				f(fmt.Sprintf("streams[%d].%s", i, o.name), o, &c.Streams[i])
			}
		}
	}
}

// String renders every option as key=value, secrets redacted; safe to log.
func (c *Config) String() string {
	var b strings.Builder
	c.eachOption(func(key string, o *option, s *Stream) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(key)
		b.WriteByte('=')
		b.WriteString(o.shown(formatValue(o.ptr(c, s))))
	})
	types := make([]string, len(c.Transforms))
	for i, t := range c.Transforms {
		types[i] = t.Type
	}
	fmt.Fprintf(&b, " transforms=%q ignored=%q", types, c.Ignored)
	return b.String()
}

func formatValue(p any) string {
	switch v := p.(type) {
	case *string:
		return strconv.Quote(*v)
	case *Secret:
		return strconv.Quote(v.mask())
	case *bool:
		return strconv.FormatBool(*v)
	case **bool:
		if *v == nil {
			return "auto"
		}
		return strconv.FormatBool(**v)
	case *int:
		return strconv.Itoa(*v)
	case *int64:
		return strconv.FormatInt(*v, 10)
	case *uint32:
		return strconv.FormatUint(uint64(*v), 10)
	case *uint64:
		return strconv.FormatUint(*v, 10)
	case *time.Duration:
		return v.String()
	case *[]string:
		return fmt.Sprintf("%q", *v)
	}
	return fmt.Sprintf("%v", p)
}

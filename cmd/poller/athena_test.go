package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// The Athena statements of docs/objects.md are what a user pastes first;
// TestAthenaTables holds them to the objects the sink writes, so a change
// to the records, the keys or the examples that breaks a table fails here.

// athenaDoc is where the statements are; each ```sql block holding a
// CREATE EXTERNAL TABLE follows a marker naming the example configuration
// it is for, and plugin_config settings that differ from the file:
//
//	<!-- athena-table: examples/parquet-athena.toml path_template="{stream}/{topic}/{date}/{hour}" -->
const athenaDoc = "docs/objects.md"

var (
	athenaBlockRE    = regexp.MustCompile("(?s)<!-- athena-table: (examples/[\\w.-]+\\.toml)((?: \\w+=\"[^\"]*\")*) -->\n```sql\n(.*?)```")
	sqlBlockRE       = regexp.MustCompile("(?s)```sql\n(.*?)```")
	athenaOverrideRE = regexp.MustCompile(`(\w+)="([^"]*)"`)
	createTableRE    = regexp.MustCompile(`(?is)^\s*CREATE EXTERNAL TABLE\s+(?:IF NOT EXISTS\s+)?([\w.]+)\s*\(`)
	partitionedRE    = regexp.MustCompile(`(?is)^\s*PARTITIONED BY\s*\(`)
	serdeRE          = regexp.MustCompile(`(?is)^\s*ROW FORMAT SERDE\s+'([^']+)'`)
	storedParquetRE  = regexp.MustCompile(`(?is)^\s*STORED AS PARQUET\b`)
	locationRE       = regexp.MustCompile(`(?is)^\s*LOCATION\s+'([^']+)'`)
	tblPropertiesRE  = regexp.MustCompile(`(?is)^\s*TBLPROPERTIES\s*\(`)
	propertyRE       = regexp.MustCompile(`'([^']*)'\s*=\s*'([^']*)'`)
	columnRE         = regexp.MustCompile("(?s)^(`[^`]+`|\\w+)\\s+(.+)$")
	templateVarRE    = regexp.MustCompile(`\$\{(\w+)\}`)
)

const openXSerDe = "org.openx.data.jsonserde.JsonSerDe"

// athenaTable is one CREATE EXTERNAL TABLE of the documentation.
type athenaTable struct {
	example    string            // examples/<name>.toml
	overrides  map[string]string // plugin_config setting -> value
	name       string
	columns    []hiveColumn
	partitions []hiveColumn
	serde      string // ROW FORMAT SERDE; "" for STORED AS PARQUET
	parquet    bool
	location   string
	props      map[string]string
}

type hiveColumn struct {
	name string
	typ  hiveType
}

// hiveType is a column type of Athena's DDL: a primitive, or map, array or
// struct of others.
type hiveType struct {
	kind     string // bigint, string, timestamp, ..., map, array, struct
	key, val *hiveType
	fields   []hiveColumn
}

// athenaMessage is one line of testdata/athena/input.jsonl (render's
// envelope), as the test expects to read it back.
type athenaMessage struct {
	Offset    uint64                     `json:"offset"`
	Timestamp time.Time                  `json:"timestamp"`
	Headers   map[string]json.RawMessage `json:"headers"`
	Payload   json.RawMessage            `json:"payload"`
}

// TestAthenaTables: every CREATE EXTERNAL TABLE of docs/objects.md, for
// objects its example configuration writes (`poller render`'s path, the
// sink's own encoder and keys):
//   - its storage.location.template, filled in per its projections for the
//     object's time, is the folder of the object's key, which lies under
//     LOCATION, and the object's error object does not;
//   - its columns are exactly the record's fields (JSON) or the file's
//     columns, of the same types (Parquet);
//   - DuckDB, reading the folder's objects through the statement's columns
//     and types, reads each record a user would look for: offsets, the
//     time, a payload field, headers.
//
// The statements must cover JSON Lines and Parquet, each under the default
// path_template and a Hive-style one.
func TestAthenaTables(t *testing.T) {
	root := testenv.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, athenaDoc))
	if err != nil {
		t.Fatal(err)
	}
	tables := athenaTables(t, string(doc))
	input, msgs := athenaInput(t)
	defaultTemplate := optionDefault(t, "plugin_config.path_template")
	covered := map[string]bool{}
	sawErrors := false
	for _, tbl := range tables {
		t.Run(tbl.name, func(t *testing.T) {
			cfg, err := config.Load(filepath.Join(root, tbl.example), overrideEnv(t, tbl.overrides))
			if err != nil {
				t.Fatalf("%s with %v does not load: %v", tbl.example, tbl.overrides, err)
			}
			format := "parquet"
			switch {
			case cfg.Plugin.OutputFormat == "json_lines" && tbl.serde == openXSerDe && !tbl.parquet:
				format = "json"
			case cfg.Plugin.OutputFormat == "parquet" && tbl.parquet && tbl.serde == "":
			default:
				t.Fatalf("the statement (SerDe %q, Parquet %v) does not read %s objects", tbl.serde, tbl.parquet, cfg.Plugin.OutputFormat)
			}
			layout := "hive"
			if cfg.Plugin.PathTemplate == defaultTemplate {
				layout = "default"
			} else if !strings.Contains(cfg.Plugin.PathTemplate, "=") {
				t.Fatalf("path_template %q is neither the default nor Hive-style", cfg.Plugin.PathTemplate)
			}
			covered[format+" "+layout] = true

			stream, topic, key := athenaPartition(t, cfg, tbl, msgs)
			var obj, errs bytes.Buffer
			res, err := ops.Render(cfg, bytes.NewReader(input), &obj, ops.RenderOptions{Envelope: true, Stream: stream, Topic: topic, Errors: &errs})
			if err != nil {
				t.Fatal(err)
			}
			if res.Key != key {
				t.Fatalf("render wrote key %s, internal/keys names it %s", res.Key, key)
			}
			bucket := "s3://" + cfg.Plugin.Bucket + "/"
			dir := bucket + path.Dir(key) + "/"
			if got := fillLocationTemplate(t, tbl, msgs[0].Timestamp); got != dir {
				t.Fatalf("storage.location.template filled in for %s is\n  %s\nbut the object's folder is\n  %s", msgs[0].Timestamp.Format(time.RFC3339), got, dir)
			}
			if !strings.HasSuffix(tbl.location, "/") || !strings.HasPrefix(dir, tbl.location) {
				t.Fatalf("LOCATION %s is not a folder holding %s", tbl.location, dir)
			}
			rejected := map[uint64]bool{}
			if res.ErrorsKey != "" {
				sawErrors = true
				if strings.HasPrefix(bucket+res.ErrorsKey, tbl.location) {
					t.Fatalf("the error object %s%s lies under LOCATION %s", bucket, res.ErrorsKey, tbl.location)
				}
				for _, line := range bytes.Split(bytes.TrimSpace(errs.Bytes()), []byte("\n")) {
					var e struct{ Offset uint64 }
					if err := json.Unmarshal(line, &e); err != nil {
						t.Fatalf("error object line %q: %v", line, err)
					}
					rejected[e.Offset] = true
				}
			}
			var want []athenaMessage
			for _, m := range msgs {
				if !rejected[m.Offset] {
					want = append(want, m)
				}
			}
			if len(want) < 2 {
				t.Fatalf("only %d of the %d sample records reach the table (rejected: %v)", len(want), len(msgs), rejected)
			}
			if format == "json" {
				checkJSONFields(t, tbl, decompress(t, string(cfg.Plugin.Compression), obj.Bytes()))
			}

			// The object goes where S3 would have it, so the read below
			// finds it through the filled-in template, as Athena does.
			store := t.TempDir()
			local := func(url string) string {
				return filepath.Join(store, filepath.FromSlash(strings.TrimPrefix(url, "s3://")))
			}
			writeFile(t, local(bucket+key), obj.Bytes())
			if res.ErrorsKey != "" {
				writeFile(t, local(bucket+res.ErrorsKey), errs.Bytes())
			}
			t.Run("duckdb", func(t *testing.T) {
				rows := readAsAthena(t, tbl, format, local(dir))
				checkAthenaRows(t, tbl, stream, topic, want, rows)
			})
		})
	}
	for _, c := range []string{"json default", "json hive", "parquet default", "parquet hive"} {
		if !covered[c] {
			t.Errorf("%s has no Athena statement for %s objects under the %s path_template", athenaDoc, strings.Fields(c)[0], strings.Fields(c)[1])
		}
	}
	if !sawErrors {
		t.Error("no statement's configuration wrote an error object, so none was checked to stay out of its table")
	}
}

// athenaTables parses the marked statements, and fails when a CREATE
// EXTERNAL TABLE of the page has no marker (it would go untested).
func athenaTables(t *testing.T, doc string) []athenaTable {
	t.Helper()
	creates := 0
	for _, m := range sqlBlockRE.FindAllStringSubmatch(doc, -1) {
		if strings.Contains(strings.ToUpper(m[1]), "CREATE EXTERNAL TABLE") {
			creates++
		}
	}
	var out []athenaTable
	for _, m := range athenaBlockRE.FindAllStringSubmatch(doc, -1) {
		tbl, err := parseCreateTable(m[3])
		if err != nil {
			t.Fatalf("%s: the statement after the marker for %s: %v", athenaDoc, m[1], err)
		}
		tbl.example = m[1]
		tbl.overrides = map[string]string{}
		for _, o := range athenaOverrideRE.FindAllStringSubmatch(m[2], -1) {
			tbl.overrides[o[1]] = o[2]
		}
		out = append(out, tbl)
	}
	if creates != len(out) {
		t.Fatalf("%s has %d CREATE EXTERNAL TABLE statements but %d follow an <!-- athena-table: examples/… --> marker; mark each with the configuration it is for", athenaDoc, creates, len(out))
	}
	if len(out) == 0 {
		t.Fatalf("%s has no Athena statements", athenaDoc)
	}
	return out
}

// parseCreateTable reads one CREATE EXTERNAL TABLE statement in the order
// the documentation writes its clauses.
func parseCreateTable(sql string) (athenaTable, error) {
	var tbl athenaTable
	rest := sql
	m := createTableRE.FindStringSubmatchIndex(rest)
	if m == nil {
		return tbl, fmt.Errorf("no CREATE EXTERNAL TABLE <name> ( at its start")
	}
	tbl.name = rest[m[2]:m[3]]
	var err error
	var cols string
	if cols, rest, err = parenthesised(rest[m[1]-1:]); err != nil {
		return tbl, err
	}
	if tbl.columns, err = parseColumns(cols); err != nil {
		return tbl, err
	}
	if m := partitionedRE.FindStringIndex(rest); m != nil {
		if cols, rest, err = parenthesised(rest[m[1]-1:]); err != nil {
			return tbl, err
		}
		if tbl.partitions, err = parseColumns(cols); err != nil {
			return tbl, fmt.Errorf("PARTITIONED BY: %w", err)
		}
	}
	if m := serdeRE.FindStringSubmatchIndex(rest); m != nil {
		tbl.serde, rest = rest[m[2]:m[3]], rest[m[1]:]
	}
	if m := storedParquetRE.FindStringIndex(rest); m != nil {
		tbl.parquet, rest = true, rest[m[1]:]
	}
	m = locationRE.FindStringSubmatchIndex(rest)
	if m == nil {
		return tbl, fmt.Errorf("no LOCATION after the columns, partitions and format: %q", rest)
	}
	tbl.location, rest = rest[m[2]:m[3]], rest[m[1]:]
	tbl.props = map[string]string{}
	if m := tblPropertiesRE.FindStringIndex(rest); m != nil {
		var props string
		if props, rest, err = parenthesised(rest[m[1]-1:]); err != nil {
			return tbl, err
		}
		for _, p := range propertyRE.FindAllStringSubmatch(props, -1) {
			tbl.props[p[1]] = p[2]
		}
	}
	if r := strings.TrimSpace(rest); r != ";" {
		return tbl, fmt.Errorf("want one statement ending in ';', found %q after it", r)
	}
	return tbl, nil
}

// parenthesised returns what the parenthesis s starts with holds, and the
// text after its closing one.
func parenthesised(s string) (inner, rest string, err error) {
	depth := 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[1:i], s[i+1:], nil
			}
		}
	}
	return "", "", fmt.Errorf("unbalanced parentheses in %q", s)
}

// splitTop splits s at the commas outside <…> and (…).
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseColumns(s string) ([]hiveColumn, error) {
	var out []hiveColumn
	for _, item := range splitTop(s) {
		item = strings.TrimSpace(item)
		m := columnRE.FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("column %q: want <name> <type>", item)
		}
		typ, err := parseHiveType(m[2])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", m[1], err)
		}
		out = append(out, hiveColumn{name: strings.Trim(m[1], "`"), typ: typ})
	}
	return out, nil
}

// hivePrimitives are the primitive types a statement here may use, with
// DuckDB's name for each.
var hivePrimitives = map[string]string{
	"bigint": "BIGINT", "int": "INTEGER", "integer": "INTEGER", "smallint": "SMALLINT", "tinyint": "TINYINT",
	"double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "string": "VARCHAR", "timestamp": "TIMESTAMP",
	"date": "DATE", "binary": "BLOB",
}

func parseHiveType(s string) (hiveType, error) {
	p := &typeParser{s: s}
	t, err := p.typ()
	if err != nil {
		return t, err
	}
	if p.skip(); p.i != len(p.s) {
		return t, fmt.Errorf("type %q: unexpected %q", s, p.s[p.i:])
	}
	return t, nil
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) skip() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *typeParser) expect(c byte) error {
	p.skip()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("type %q: want %q at %d", p.s, c, p.i)
	}
	p.i++
	return nil
}

// name reads a word, or a name in backquotes.
func (p *typeParser) name() string {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == '`' {
		end := strings.IndexByte(p.s[p.i+1:], '`')
		if end < 0 {
			return ""
		}
		n := p.s[p.i+1 : p.i+1+end]
		p.i += end + 2
		return n
	}
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *typeParser) typ() (hiveType, error) {
	kind := strings.ToLower(p.name())
	t := hiveType{kind: kind}
	switch kind {
	case "map":
		if err := p.expect('<'); err != nil {
			return t, err
		}
		k, err := p.typ()
		if err != nil {
			return t, err
		}
		if err := p.expect(','); err != nil {
			return t, err
		}
		v, err := p.typ()
		if err != nil {
			return t, err
		}
		t.key, t.val = &k, &v
		return t, p.expect('>')
	case "array":
		if err := p.expect('<'); err != nil {
			return t, err
		}
		e, err := p.typ()
		if err != nil {
			return t, err
		}
		t.val = &e
		return t, p.expect('>')
	case "struct":
		if err := p.expect('<'); err != nil {
			return t, err
		}
		for {
			n := p.name()
			if n == "" {
				return t, fmt.Errorf("type %q: a struct member without a name at %d", p.s, p.i)
			}
			if err := p.expect(':'); err != nil {
				return t, err
			}
			ft, err := p.typ()
			if err != nil {
				return t, err
			}
			t.fields = append(t.fields, hiveColumn{name: n, typ: ft})
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			return t, p.expect('>')
		}
	}
	if _, ok := hivePrimitives[kind]; !ok {
		return t, fmt.Errorf("type %q: %q is not a type this test maps to DuckDB", p.s, kind)
	}
	return t, nil
}

// duckDB is the DuckDB type the column reads as.
func (t hiveType) duckDB() string {
	switch t.kind {
	case "map":
		return "MAP(" + t.key.duckDB() + ", " + t.val.duckDB() + ")"
	case "array":
		return t.val.duckDB() + "[]"
	case "struct":
		var fs []string
		for _, f := range t.fields {
			fs = append(fs, strconv.Quote(f.name)+" "+f.typ.duckDB())
		}
		return "STRUCT(" + strings.Join(fs, ", ") + ")"
	}
	return hivePrimitives[t.kind]
}

// athenaInput reads the sample messages, in render's envelope form.
func athenaInput(t *testing.T) ([]byte, []athenaMessage) {
	t.Helper()
	input, err := os.ReadFile(filepath.Join("testdata", "athena", "input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []athenaMessage
	for _, line := range bytes.Split(bytes.TrimSpace(input), []byte("\n")) {
		var m athenaMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("testdata/athena/input.jsonl: %v", err)
		}
		msgs = append(msgs, m)
	}
	// Every message falls in the hour of the first, the object's time:
	// Render writes them all as one object, as the sink may.
	for _, m := range msgs {
		if m.Timestamp.Truncate(time.Hour) != msgs[0].Timestamp.Truncate(time.Hour) {
			t.Fatalf("testdata/athena/input.jsonl: offset %d is not in the hour of the first message", m.Offset)
		}
	}
	return input, msgs
}

func optionDefault(t *testing.T, key string) string {
	t.Helper()
	for _, o := range config.Options() {
		if o.Key == key {
			return o.Default
		}
	}
	t.Fatalf("no option %s", key)
	return ""
}

// overrideEnv sets the marker's plugin_config settings through their
// environment variables, which take precedence over the file.
func overrideEnv(t *testing.T, overrides map[string]string) func(string) (string, bool) {
	t.Helper()
	env := map[string]string{}
	for name, v := range overrides {
		found := false
		for _, o := range config.Options() {
			if o.Key == "plugin_config."+name && o.Env != "" {
				env[o.Env], found = v, true
			}
		}
		if !found {
			t.Fatalf("marker setting %q is no plugin_config setting with an environment variable", name)
		}
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// athenaPartition finds the configuration's stream and topic whose objects
// lie under the table's LOCATION, and the key of the sample's object there.
func athenaPartition(t *testing.T, cfg *config.Config, tbl athenaTable, msgs []athenaMessage) (stream, topic, key string) {
	t.Helper()
	ext := batch.ObjectExt(batch.Format(cfg.Plugin.OutputFormat), batch.Compression(cfg.Plugin.Compression))
	namer := keys.NewNamer(cfg.Plugin.Prefix, cfg.Plugin.Template, ext).WithErrors(cfg.Plugin.ErrorsPrefix())
	first, last := msgs[0].Offset, msgs[len(msgs)-1].Offset
	ts := uint64(msgs[0].Timestamp.UnixMicro())
	var found []string
	for _, st := range cfg.Streams {
		for _, tp := range st.Topics {
			k := namer.Partition(st.Stream, tp, 0).Object(first, last, ts)
			if strings.HasPrefix("s3://"+cfg.Plugin.Bucket+"/"+k, tbl.location) {
				stream, topic, key = st.Stream, tp, k
				found = append(found, st.Stream+"/"+tp)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("LOCATION %s holds the objects of %d of %s's topics (%v), want one", tbl.location, len(found), tbl.example, found)
	}
	return stream, topic, key
}

// fillLocationTemplate fills in storage.location.template as Athena does
// for a partition of time ts: date projections in their format, integer
// ones named after a time field (year, month, day, hour, minute) as that
// field, zero-padded to their digits. Each value must lie in its range.
func fillLocationTemplate(t *testing.T, tbl athenaTable, ts time.Time) string {
	t.Helper()
	ts = ts.UTC()
	if tbl.props["projection.enabled"] != "true" {
		t.Fatalf("projection.enabled is %q, want 'true'", tbl.props["projection.enabled"])
	}
	tpl := tbl.props["storage.location.template"]
	if tpl == "" {
		t.Fatal("no storage.location.template")
	}
	used := map[string]bool{}
	for _, m := range templateVarRE.FindAllStringSubmatch(tpl, -1) {
		used[m[1]] = true
	}
	values := map[string]string{}
	for _, pc := range tbl.partitions {
		if !used[pc.name] {
			t.Fatalf("partition column %s is not in storage.location.template %s", pc.name, tpl)
		}
		delete(used, pc.name)
		values[pc.name] = projectedValue(t, tbl.props, pc.name, ts)
	}
	for name := range used {
		t.Fatalf("storage.location.template names ${%s}, which is no partition column", name)
	}
	return templateVarRE.ReplaceAllStringFunc(tpl, func(v string) string {
		return values[templateVarRE.FindStringSubmatch(v)[1]]
	})
}

func projectedValue(t *testing.T, props map[string]string, col string, ts time.Time) string {
	t.Helper()
	prop := func(name string) string { return props["projection."+col+"."+name] }
	lo, hi, ok := strings.Cut(prop("range"), ",")
	if !ok {
		t.Fatalf("projection.%s.range %q: want 'low,high'", col, prop("range"))
	}
	switch prop("type") {
	case "date":
		layout := javaDateLayout(t, prop("format"))
		v := ts.Format(layout)
		start, err := time.Parse(layout, strings.TrimSpace(lo))
		if err != nil {
			t.Fatalf("projection.%s.range start %q: %v", col, lo, err)
		}
		end := time.Now()
		if strings.TrimSpace(hi) != "NOW" {
			if end, err = time.Parse(layout, strings.TrimSpace(hi)); err != nil {
				t.Fatalf("projection.%s.range end %q: %v", col, hi, err)
			}
		}
		if ts.Before(start) || ts.After(end) {
			t.Fatalf("projection.%s.range %q does not hold %s", col, prop("range"), v)
		}
		if prop("interval") == "" || prop("interval.unit") == "" {
			t.Fatalf("projection.%s: set interval and interval.unit", col)
		}
		return v
	case "integer":
		fields := map[string]int{"year": ts.Year(), "month": int(ts.Month()), "day": ts.Day(), "hour": ts.Hour(), "minute": ts.Minute()}
		v, ok := fields[col]
		if !ok {
			t.Fatalf("integer projection %s: the test knows the time fields year, month, day, hour and minute", col)
		}
		l, err1 := strconv.Atoi(strings.TrimSpace(lo))
		h, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || v < l || v > h {
			t.Fatalf("projection.%s.range %q does not hold %d", col, prop("range"), v)
		}
		digits := 0
		if d := prop("digits"); d != "" {
			var err error
			if digits, err = strconv.Atoi(d); err != nil {
				t.Fatalf("projection.%s.digits %q: %v", col, d, err)
			}
		}
		return fmt.Sprintf("%0*d", digits, v)
	}
	t.Fatalf("partition column %s: projection type %q (want date or integer)", col, prop("type"))
	return ""
}

// javaDateLayout turns the Java date format of a date projection into a
// Go layout (the letters the path placeholders need).
func javaDateLayout(t *testing.T, f string) string {
	t.Helper()
	r := strings.NewReplacer("yyyy", "2006", "MM", "01", "dd", "02", "HH", "15", "mm", "04")
	l := r.Replace(f)
	if strings.ContainsAny(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
		t.Fatalf("date format %q: the test reads yyyy, MM, dd, HH and mm only", f)
	}
	return l
}

// checkJSONFields: the table declares exactly the fields the records
// carry, in their order.
func checkJSONFields(t *testing.T, tbl athenaTable, body []byte) {
	t.Helper()
	var fields []string
	seen := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
		dec := json.NewDecoder(bytes.NewReader(line))
		if _, err := dec.Token(); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("record %q: %v", line, err)
			}
			name := tok.(string)
			if !seen[name] {
				seen[name] = true
				fields = append(fields, name)
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatalf("record %q: %v", line, err)
			}
		}
	}
	var declared []string
	for _, c := range tbl.columns {
		declared = append(declared, c.name)
	}
	if !reflect.DeepEqual(declared, fields) {
		t.Fatalf("the table declares %v; the records carry %v", declared, fields)
	}
}

// athenaRead is what testdata/athena/read.py reports.
type athenaRead struct {
	Declared [][2]string      `json:"declared"`
	File     [][2]string      `json:"file"`
	Rows     []map[string]any `json:"rows"`
}

// readAsAthena reads the objects of one partition folder as the table
// declares them: the files Athena would read (names not beginning with _
// or .), through the declared columns mapped to DuckDB's types.
func readAsAthena(t *testing.T, tbl athenaTable, format, dir string) athenaRead {
	t.Helper()
	py := testenv.RequireTool(t, filepath.Join("pyenv-parquet", "bin", "python"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the folder the template names: %v", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), "_") && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) != 1 {
		t.Fatalf("the folder holds %d objects, want the one written: %v", len(files), entries)
	}
	var cols [][2]string
	for _, c := range tbl.columns {
		cols = append(cols, [2]string{c.name, c.typ.duckDB()})
	}
	spec, _ := json.Marshal(map[string]any{"format": format, "files": files, "columns": cols})
	cmd := exec.Command(py, filepath.Join("testdata", "athena", "read.py"))
	cmd.Stdin = bytes.NewReader(spec)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("DuckDB could not read the objects through the statement's columns %v: %v\n%s", cols, err, stderr.String())
	}
	var r athenaRead
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("read.py: %v\n%s", err, out)
	}
	if format == "parquet" {
		checkParquetColumns(t, r)
	}
	return r
}

// checkParquetColumns: the table declares exactly the file's columns, in
// its order, each of the file's type (Athena refuses a Parquet column of
// another type). A timestamp column reads the file's UTC-adjusted
// timestamps.
func checkParquetColumns(t *testing.T, r athenaRead) {
	t.Helper()
	if len(r.Declared) != len(r.File) {
		t.Fatalf("the table declares %v; the file has %v", r.Declared, r.File)
	}
	for i, d := range r.Declared {
		f := r.File[i]
		if d[0] != f[0] {
			t.Fatalf("column %d: the table declares %s, the file has %s (%v / %v)", i, d[0], f[0], r.Declared, r.File)
		}
		if d[1] != f[1] && !(d[1] == "TIMESTAMP" && f[1] == "TIMESTAMP WITH TIME ZONE") {
			t.Errorf("column %s: the table's type reads as %s, the file's is %s", d[0], d[1], f[1])
		}
	}
}

// checkAthenaRows compares what DuckDB read with the sample messages that
// were not rejected, column by column.
func checkAthenaRows(t *testing.T, tbl athenaTable, stream, topic string, want []athenaMessage, r athenaRead) {
	t.Helper()
	if len(r.Rows) != len(want) {
		t.Fatalf("read %d rows, want %d (the records not in the error object)", len(r.Rows), len(want))
	}
	for i, m := range want {
		row := r.Rows[i]
		payload := decodeJSONValue(t, m.Payload)
		for _, c := range tbl.columns {
			got := row[c.name]
			var err error
			switch c.name {
			case "offset":
				err = sameValue(c.typ, json.Number(strconv.FormatUint(m.Offset, 10)), got)
			case "stream":
				err = sameValue(c.typ, stream, got)
			case "topic":
				err = sameValue(c.typ, topic, got)
			case "partition_id":
				err = sameValue(c.typ, json.Number("0"), got)
			case "timestamp":
				err = sameTime(c.typ, m.Timestamp, got)
			case "headers":
				err = sameValue(c.typ, headerTexts(t, m.Headers), got)
			case "payload":
				// JSON Lines: the payload's JSON, or the base64 string of
				// one that was not JSON.
				if s, ok := payload.(string); ok && !json.Valid([]byte(s)) {
					payload = base64.StdEncoding.EncodeToString([]byte(s))
				}
				err = sameValue(c.typ, payload, got)
			default:
				// A Parquet payload column: that member of the payload.
				obj, _ := payload.(map[string]any)
				err = sameValue(c.typ, obj[c.name], got)
			}
			if err != nil {
				t.Errorf("offset %d, column %s: %v", m.Offset, c.name, err)
			}
		}
	}
	// What a user checks first: the first order, where they expect it.
	if id := orderID(t, r.Rows[0]); id != "1001" {
		t.Errorf("the first row's data.order_id reads %q, want 1001", id)
	}
}

// orderID reads data.order_id the way the documentation's queries do:
// from the data struct (Parquet) or the payload's JSON (JSON Lines).
func orderID(t *testing.T, row map[string]any) string {
	t.Helper()
	if data, ok := row["data"].(map[string]any); ok {
		return fmt.Sprint(data["order_id"])
	}
	s, _ := row["payload"].(string)
	var p struct {
		Data struct {
			OrderID json.Number `json:"order_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatalf("payload %q: %v", s, err)
	}
	return p.Data.OrderID.String()
}

// decodeJSONValue decodes raw with numbers kept as text; a JSON string is
// the message's text, as render's envelope reads it.
func decodeJSONValue(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// headerTexts is how a map<string,string> column reads the headers: each
// value as its text (nil when the message has none).
func headerTexts(t *testing.T, h map[string]json.RawMessage) any {
	t.Helper()
	if len(h) == 0 {
		return nil
	}
	out := map[string]any{}
	for k, raw := range h {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(raw)
		}
	}
	return out
}

// sameTime compares the timestamp column: RFC 3339 text in whole seconds
// for a string column (the JSON records'), the instant to the microsecond
// for a timestamp column (DuckDB shows it as "2006-01-02 15:04:05.999999").
func sameTime(typ hiveType, want time.Time, got any) error {
	s, ok := got.(string)
	if !ok {
		return fmt.Errorf("got %#v, want text", got)
	}
	switch typ.kind {
	case "string":
		if w := want.UTC().Truncate(time.Second).Format(time.RFC3339); s != w {
			return fmt.Errorf("got %q, want %q", s, w)
		}
	case "timestamp":
		g, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil || !g.Equal(want.Truncate(time.Microsecond)) {
			return fmt.Errorf("got %q, want %s", s, want.UTC().Format(time.RFC3339Nano))
		}
	default:
		return fmt.Errorf("a %s column; declare string (JSON) or timestamp (Parquet)", typ.kind)
	}
	return nil
}

// sameValue compares a value of the source (decoded with UseNumber) with
// what a column of type typ read: structs by their declared members (the
// pinned schema drops the others), a string column of a non-string value
// as that value's JSON text.
func sameValue(typ hiveType, want, got any) error {
	if want == nil {
		if got != nil {
			return fmt.Errorf("got %#v, want NULL", got)
		}
		return nil
	}
	switch typ.kind {
	case "struct":
		w, ok1 := want.(map[string]any)
		g, ok2 := got.(map[string]any)
		if !ok1 || !ok2 {
			return fmt.Errorf("got %#v, want the object %#v", got, want)
		}
		for _, f := range typ.fields {
			if err := sameValue(f.typ, w[f.name], g[f.name]); err != nil {
				return fmt.Errorf(".%s: %w", f.name, err)
			}
		}
	case "map":
		w, ok1 := want.(map[string]any)
		g, ok2 := got.(map[string]any)
		if !ok1 || !ok2 || len(w) != len(g) {
			return fmt.Errorf("got %#v, want %#v", got, want)
		}
		for k, v := range w {
			if err := sameValue(*typ.val, v, g[k]); err != nil {
				return fmt.Errorf("[%q]: %w", k, err)
			}
		}
	case "array":
		w, ok1 := want.([]any)
		g, ok2 := got.([]any)
		if !ok1 || !ok2 || len(w) != len(g) {
			return fmt.Errorf("got %#v, want %#v", got, want)
		}
		for i := range w {
			if err := sameValue(*typ.val, w[i], g[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case "string":
		g, ok := got.(string)
		if !ok {
			return fmt.Errorf("got %#v, want text", got)
		}
		if w, ok := want.(string); ok {
			if g != w {
				return fmt.Errorf("got %q, want %q", g, w)
			}
			return nil
		}
		var gv any
		dec := json.NewDecoder(strings.NewReader(g))
		dec.UseNumber()
		if err := dec.Decode(&gv); err != nil || !reflect.DeepEqual(gv, want) {
			return fmt.Errorf("got %q, want the JSON of %#v", g, want)
		}
	default:
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("got %#v, want %#v", got, want)
		}
	}
	return nil
}

func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// docRefRE matches a pointer into the documentation in a comment of an
// example configuration.
var docRefRE = regexp.MustCompile(`docs/[\w.-]+\.md(?:#[\w-]+)?`)

// TestExamplesPointIntoTheDocs: every docs/<file>.md#<anchor> an example's
// comments name is a heading there (a pointer to a statement that was
// nowhere is how TestAthenaTables began).
func TestExamplesPointIntoTheDocs(t *testing.T) {
	root := testenv.RepoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "examples", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v %v", files, err)
	}
	refs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range docRefRE.FindAllString(string(b), -1) {
			refs++
			file, anchor, _ := strings.Cut(ref, "#")
			md, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Errorf("%s points to %s: %v", filepath.Base(f), ref, err)
				continue
			}
			if anchor != "" && !anchors(string(md))[anchor] {
				t.Errorf("%s points to %s: %s has no heading #%s", filepath.Base(f), ref, file, anchor)
			}
		}
	}
	if refs == 0 {
		t.Error("no example points into docs/; examples/parquet-athena.toml should name its Athena statements")
	}
}

// Package parquetread reads Parquet files back in tests with two
// independent readers, pyarrow and DuckDB (internal/parquet/testdata/
// readback.py in the venv `make parquet-readers` installs), many files per
// process, and compares what they read with the JSON the files came from.
package parquetread

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// Side is what one reader saw of a file. Values are tagged where JSON
// cannot tell them apart: {"$f": repr} for floats, {"$b": base64} for
// bytes, {"$ts": micros} for timestamps; a map is a list of [key, value];
// integers are json.Number.
type Side struct {
	Error     string      `json:"error"`
	Columns   [][2]string `json:"columns"` // name and type, in Arrow's spelling
	Rows      [][]any     `json:"rows"`
	Leaves    [][]any     `json:"leaves"` // path, physical, logical, converted type, levels (pyarrow only)
	RowGroups int         `json:"row_groups"`
	CreatedBy string      `json:"created_by"`
}

// File is what both readers saw of one file.
type File struct {
	File    string `json:"file"`
	PyArrow Side   `json:"pyarrow"`
	DuckDB  Side   `json:"duckdb"`
}

// Sides names both readers' views, for loops.
func (f File) Sides() map[string]Side {
	return map[string]Side{"pyarrow": f.PyArrow, "duckdb": f.DuckDB}
}

const python = "pyenv-parquet/bin/python"

// Available reports whether the readers are installed. In CI (CI=true) a
// missing venv fails the test; elsewhere the caller decides what to skip.
func Available(t testing.TB) bool {
	t.Helper()
	if testenv.CheckOnly() {
		return false
	}
	p := filepath.Join(testenv.RepoRoot(t), ".bin", python)
	if _, err := os.Stat(p); err == nil {
		return true
	}
	if testenv.InCI() {
		t.Fatalf("parquetread: %s is missing (CI=true: make parquet-readers installs it)", p)
	}
	return false
}

// ReadFiles reads every file with both readers, in one process; it skips
// the test locally when the readers are not installed (fails in CI).
func ReadFiles(t testing.TB, paths []string) map[string]File {
	t.Helper()
	py := testenv.RequireTool(t, python)
	script := filepath.Join(testenv.RepoRoot(t), "internal", "parquet", "testdata", "readback.py")
	cmd := exec.Command(py, append([]string{script}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readback.py: %v\n%s", err, stderr.String())
	}
	res := map[string]File{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var f File
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("readback.py output: %v", err)
		}
		res[f.File] = f
	}
	return res
}

// ReadBytes writes each named body to a temporary file and reads them all
// back, keyed by name.
func ReadBytes(t testing.TB, bodies map[string][]byte) map[string]File {
	t.Helper()
	dir := t.TempDir()
	paths := map[string]string{}
	var list []string
	i := 0
	for name, b := range bodies {
		p := filepath.Join(dir, fmt.Sprintf("f%05d.parquet", i))
		i++
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths[p] = name
		list = append(list, p)
	}
	got := ReadFiles(t, list)
	out := map[string]File{}
	for p, name := range paths {
		f, ok := got[p]
		if !ok {
			t.Fatalf("readback.py said nothing of %s", name)
		}
		f.File = name
		out[name] = f
	}
	return out
}

// AthenaProblems lists the leaf columns (pyarrow's view) of types Athena
// cannot read: unsigned integers, nanosecond timestamps, INT96.
func AthenaProblems(s Side) []string {
	var out []string
	for _, l := range s.Leaves {
		if len(l) < 4 {
			continue
		}
		physical, logical, converted := fmt.Sprint(l[1]), fmt.Sprint(l[2]), fmt.Sprint(l[3])
		switch {
		case physical == "INT96":
			out = append(out, fmt.Sprintf("%v: INT96", l[0]))
		case strings.Contains(logical, "isSigned=false"), strings.HasPrefix(converted, "UINT"):
			out = append(out, fmt.Sprintf("%v: unsigned (%s %s)", l[0], logical, converted))
		case strings.Contains(strings.ToLower(logical), "nanos"):
			out = append(out, fmt.Sprintf("%v: nanoseconds (%s)", l[0], logical))
		}
	}
	return out
}

// Row returns row i of s as column name -> value.
func (s Side) Row(i int) map[string]any {
	m := make(map[string]any, len(s.Columns))
	for j, c := range s.Columns {
		m[c[0]] = s.Rows[i][j]
	}
	return m
}

// Type returns the type of column name ("" when there is none).
func (s Side) Type(name string) string {
	for _, c := range s.Columns {
		if c[0] == name {
			return c[1]
		}
	}
	return ""
}

// DecodeJSON decodes a source payload the way Same compares it (numbers as
// json.Number).
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// Same compares a value decoded from source JSON (DecodeJSON) with what a
// reader read: objects as structs (a member that is null or absent on one
// side may be absent on the other: no column holds it), arrays as lists,
// integers exactly, numbers in a DOUBLE column by value, strings exactly.
func Same(want, got any) error {
	switch w := want.(type) {
	case nil:
		if got != nil {
			return fmt.Errorf("want null, got %v", got)
		}
	case bool, string:
		if got != w {
			return fmt.Errorf("want %#v, got %#v", w, got)
		}
	case json.Number:
		return sameNumber(w, got)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("want a list of %d, got %#v", len(w), got)
		}
		for i := range w {
			if err := Same(w[i], g[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("want a struct, got %#v", got)
		}
		for k, v := range w {
			if err := Same(v, g[k]); err != nil {
				return fmt.Errorf(".%s: %w", k, err)
			}
		}
		for k, v := range g {
			if _, ok := w[k]; !ok && v != nil {
				return fmt.Errorf(".%s: not in the source, got %#v", k, v)
			}
		}
	default:
		return fmt.Errorf("source value %#v of an unexpected type", want)
	}
	return nil
}

func sameNumber(w json.Number, got any) error {
	switch g := got.(type) {
	case json.Number:
		if _, err := strconv.ParseInt(string(w), 10, 64); err != nil || string(g) != string(w) {
			return fmt.Errorf("want %s, got the integer %s", w, g)
		}
		return nil
	case map[string]any:
		f, ok := g["$f"].(string)
		if !ok {
			break
		}
		gv, err1 := strconv.ParseFloat(strings.ReplaceAll(f, "inf", "Inf"), 64)
		wv, err2 := strconv.ParseFloat(string(w), 64)
		if err1 != nil || err2 != nil || (gv != wv && !(math.IsNaN(gv) && math.IsNaN(wv))) {
			return fmt.Errorf("want %s, got the double %s", w, f)
		}
		return nil
	}
	return fmt.Errorf("want the number %s, got %#v", w, got)
}

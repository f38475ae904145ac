// Command dashboard draws the stack's CloudWatch dashboard, as template.yaml
// deploys it, into docs/dashboard.svg (the picture in docs/operations.md).
// Run it from the repository root after changing the dashboard:
//
//	go run ./scripts/dashboard
//
// -param Name=Value (repeatable) draws it for other parameter values, e.g.
// -param TableFormat=iceberg; -o - writes to stdout. A test in
// internal/testkit/deploytest fails while the committed picture differs.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/scripts/dashboard/picture"
)

type params map[string]string

func (p params) String() string { return fmt.Sprint(map[string]string(p)) }

func (p params) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("-param %q: want Name=Value, e.g. -param TableFormat=iceberg", s)
	}
	p[k] = v
	return nil
}

func main() {
	template := flag.String("template", "template.yaml", "the SAM template")
	out := flag.String("o", "docs/dashboard.svg", "where to write the SVG (- for stdout)")
	ps := params{}
	flag.Var(ps, "param", "a parameter value, Name=Value (repeatable); the template's defaults for the rest")
	flag.Parse()
	if err := run(*template, *out, ps); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

func run(template, out string, ps params) error {
	tpl, err := os.ReadFile(template)
	if err != nil {
		return fmt.Errorf("%w (run it from the repository root, or pass -template)", err)
	}
	svg, err := picture.RenderTemplate(tpl, picture.Options{Params: ps})
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(svg)
		return err
	}
	return os.WriteFile(out, svg, 0o644)
}

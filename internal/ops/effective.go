package ops

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// WriteEffective prints the configuration a run uses, one option a line,
// with where each value came from: the file, an environment variable (and
// the file's value it replaced), or the default. Secrets are masked.
func WriteEffective(w io.Writer, cfg *config.Config) error {
	from := "no configuration file"
	if f := cfg.File(); f != "" {
		from = "file " + f
	}
	fmt.Fprintf(w, "configuration (%s, then the environment; secrets masked):\n", from)
	replaced := map[string]config.Replacement{}
	for _, r := range cfg.Replaced {
		replaced[r.Key] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range cfg.Effective() {
		origin := string(s.Source)
		if s.Source == config.SourceEnv {
			origin += " " + s.Var
			if r, ok := replaced[s.Key]; ok {
				origin += fmt.Sprintf(" (replaces the file's %s)", r.File)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Key, s.Value, origin)
	}
	return tw.Flush()
}

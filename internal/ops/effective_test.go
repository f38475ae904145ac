package ops

import (
	"regexp"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
)

// TestWriteEffective: every option is listed with its source; a replaced
// file value is named; no secret is printed.
func TestWriteEffective(t *testing.T) {
	doc := "[[streams]]\nstream = \"s\"\ntopics = [\"t\"]\nconsumer_group = \"g\"\n[plugin_config]\nbucket = \"b\"\nregion = \"eu-west-1\"\nprefix = \"p\"\n[iggy]\npassword = \"hunter2\"\n"
	cfg, err := config.LoadBytes([]byte(doc), "sink.toml", envOf(map[string]string{"SINK_PREFIX": "q", "IGGY_ADDRESS": "iggy:8090"}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteEffective(&b, cfg); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "hunter2") {
		t.Fatalf("a secret is printed:\n%s", out)
	}
	if n, want := strings.Count(out, "\n"), len(cfg.Effective())+1; n != want {
		t.Errorf("%d lines, want %d (a heading and one per option)", n, want)
	}
	for _, re := range []string{
		`configuration \(file sink.toml, then the environment`,
		`plugin_config.prefix +"q" +environment SINK_PREFIX \(replaces the file's "p"\)`,
		`iggy.address +"iggy:8090" +environment IGGY_ADDRESS\n`,
		`plugin_config.region +"eu-west-1" +file\n`,
		`streams\[0\].consumer_group +"g" +file\n`,
		`plugin_config.max_file_size +8388608 +default\n`,
	} {
		if !regexpMatch(re, out) {
			t.Errorf("no line matches %s:\n%s", re, out)
		}
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

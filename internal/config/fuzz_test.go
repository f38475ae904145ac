package config

import (
	"strconv"
	"strings"
	"testing"
)

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"8MiB", "10MB", "1000", "8Mb", "8mib", "1.5 GiB", "", "-1", "0.0001KiB", "9EiB", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseByteSize(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseByteSize(%q) = %d < 0", s, n)
		}
		// The plain number of bytes parses back to itself.
		if back, err := ParseByteSize(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Fatalf("ParseByteSize(%d) = %d, %v", n, back, err)
		}
		if back, err := ParseByteSize(strconv.FormatInt(n, 10) + "B"); err != nil || back != n {
			t.Fatalf("ParseByteSize(%dB) = %d, %v", n, back, err)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"100ms", "1s", "5m", "1h", "1m30s", "1m 30s", "5", "1.5h", "2 days", "µs", "-1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v < 0", s, d)
		}
		// Go's own rendering of the duration parses back to it.
		if back, err := ParseDuration(d.String()); err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v, %v; want %v", d.String(), back, err, d)
		}
	})
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(minimal + "[transforms.add_fields]\nenabled = true\n[iggy]\npassword = \"p\"\n"))
	f.Add([]byte("streams = [{stream = \"s\", topics = [\"t\"]}]\nplugin_config = {bucket = \"b\", region = \"r\", max_file_size = 5}\n"))
	f.Add([]byte("[[streams]]\n[[streams]]\ntopics = [1]\n"))
	f.Add([]byte("a = 1979-05-27T07:32:00Z\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := load(data, true, "fuzz.toml", envOf(map[string]string{"SINK_STREAM": "s", "SINK_TOPICS": "t"}))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error without the config: prefix: %v", err)
			}
			return
		}
		if c.Plugin.Bucket == "" || c.Plugin.Region == "" || len(c.Streams) == 0 || c.Plugin.Template == nil || c.Plugin.MaxAttempts < 1 {
			t.Fatalf("accepted an invalid config: %s", c)
		}
		for _, s := range c.Streams {
			if s.Stream == "" || len(s.Topics) == 0 || s.ConsumerGroup == "" || s.BatchLength == 0 {
				t.Fatalf("accepted an invalid stream: %+v", s)
			}
		}
		_ = c.String()
	})
}

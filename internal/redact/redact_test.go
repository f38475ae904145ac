package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:SECRET@host:9000":                      "http://[redacted]@host:9000",
		"https://TOKEN@r2.example/bucket":                   "https://[redacted]@r2.example/bucket",
		`Put "http://u:p%40ss@127.0.0.1:1/b/k": dial tcp`:   `Put "http://[redacted]@127.0.0.1:1/b/k": dial tcp`,
		"two: http://a:b@x and s3://c:d@y/z":                "two: http://[redacted]@x and s3://[redacted]@y/z",
		"http://host:9000/path@not-userinfo":                "http://host:9000/path@not-userinfo",
		"http://user:p@ss@host/x":                           "http://[redacted]@host/x",
		"no url here, user@example.com":                     "no url here, user@example.com",
		"http://127.0.0.1:9000":                             "http://127.0.0.1:9000",
		"endpoint=\"http://user:SECRET@host\" bucket=\"b\"": "endpoint=\"http://[redacted]@host\" bucket=\"b\"",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStripUserinfo(t *testing.T) {
	for in, want := range map[string]struct {
		out string
		had bool
	}{
		"http://user:SECRET@host:9000/x": {"http://host:9000/x", true},
		"http://TOKEN@host":              {"http://host", true},
		"http://host:9000/a@b":           {"http://host:9000/a@b", false},
		"http://host":                    {"http://host", false},
	} {
		out, had := StripUserinfo(in)
		if out != want.out || had != want.had {
			t.Errorf("StripUserinfo(%q) = %q, %v; want %q, %v", in, out, had, want.out, want.had)
		}
	}
}

func FuzzURL(f *testing.F) {
	f.Add("http://user:SECRET@host")
	f.Add("x://@")
	f.Fuzz(func(t *testing.T, s string) {
		out := URL(s)
		if URL(out) != out {
			t.Fatalf("URL is not idempotent on %q: %q then %q", s, out, URL(out))
		}
	})
}

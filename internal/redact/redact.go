// Package redact hides credentials embedded in URLs (http://user:secret@host)
// before a URL, or any text that may hold one, reaches a log line or an error.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces the userinfo of a URL.
const Mask = "[redacted]"

// userinfo matches "scheme://userinfo@" anywhere in a text: up to the last
// '@' before the URL's path, query, fragment or end (a password may hold '@').
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s"'<>\\]*@`)

// URL returns s with the userinfo of every URL in it replaced by Mask:
// "http://user:secret@host:9000" becomes "http://[redacted]@host:9000".
// Text without such a URL comes back unchanged (and without allocating).
func URL(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	return userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
}

// StripUserinfo removes the userinfo of a URL, for handing the URL to a
// client that signs its requests itself (the S3 client never sends it).
// It reports whether there was any.
func StripUserinfo(raw string) (string, bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw, false
	}
	rest := raw[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return raw, false
	}
	return raw[:i+3] + rest[at+1:], true
}

package keys

import (
	"strings"
	"testing"
)

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"{stream}/{topic}/{date}/{hour}", "dt={date}/hour={hour}", "{", "}", "{}", "{x}", "{{stream}}", "a/{timestamp}/{partition}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tpl, err := ParseTemplate(s)
		if err != nil {
			return
		}
		if tpl.String() != s {
			t.Fatalf("String() = %q, want %q", tpl.String(), s)
		}
		key := NewNamer("p", tpl, "jsonl").Partition("s t", "t/u", 3).Object(4, 5, upstreamTS)
		p, first, last, ext, ok := ParseObjectName(key)
		if !ok || p != 3 || first != 4 || last != 5 || ext != "jsonl" {
			t.Fatalf("ParseObjectName(%q) = %d %d %d %q %v", key, p, first, last, ext, ok)
		}
		if lp := NewNamer("p", tpl, "jsonl").Partition("s t", "t/u", 3).ListPrefix(); !strings.HasPrefix(key, lp) {
			t.Fatalf("key %q not under ListPrefix %q", key, lp)
		}
	})
}

func FuzzParseObjectName(f *testing.F) {
	f.Add("a/b/00001-00000000000000000000-00000000000000000099.jsonl.gz", uint32(1), uint64(0), uint64(99), "jsonl")
	f.Add("000000-1-2.x", uint32(1<<32-1), uint64(1<<64-1), uint64(1<<64-1), "bin")
	f.Fuzz(func(t *testing.T, name string, partition uint32, first, last uint64, ext string) {
		// Any accepted name must be canonical: rendering its fields gives it back.
		if p, f1, l1, e1, ok := ParseObjectName(name); ok {
			base := name[strings.LastIndexByte(name, '/')+1:]
			want := string(appendFileName(nil, p, f1, l1)) + "." + e1
			if base != want || f1 > l1 {
				t.Fatalf("ParseObjectName(%q) accepted a non-canonical name (re-renders as %q)", name, want)
			}
		}
		// Round trip from ObjectKey.
		if first > last || ext == "" || strings.ContainsRune(ext, '/') {
			return
		}
		tpl := mustParse(t, "{stream}/{date}")
		key := NewNamer("x", tpl, ext).Partition("s", "t", partition).Object(first, last, upstreamTS)
		p, f1, l1, e1, ok := ParseObjectName(key)
		if !ok || p != partition || f1 != first || l1 != last || e1 != ext {
			t.Fatalf("ParseObjectName(%q) = %d %d %d %q %v; want %d %d %d %q", key, p, f1, l1, e1, ok, partition, first, last, ext)
		}
	})
}

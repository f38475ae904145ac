package keys

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// upstreamTS is the server timestamp of the reference's literal examples: 2024-03-16T14:02:31Z.
var upstreamTS = uint64(time.Date(2024, 3, 16, 14, 2, 31, 0, time.UTC).UnixMicro())

func mustParse(t testing.TB, s string) *Template {
	t.Helper()
	tpl, err := ParseTemplate(s)
	if err != nil {
		t.Fatalf("ParseTemplate(%q): %v", s, err)
	}
	return tpl
}

// TestObjectKeyUpstreamGolden reproduces every literal key of
// reference/upstream-s3-sink.md §5 and the seed document, byte for byte.
func TestObjectKeyUpstreamGolden(t *testing.T) {
	const defaultTemplate = "{stream}/{topic}/{date}/{hour}"
	tests := []struct {
		name, prefix, template, stream, topic string
		partition                             uint32
		first, last, ts                       uint64
		ext, want                             string
	}{
		{"prefix iggy/raw default template", "iggy/raw", defaultTemplate, "app_logs", "api_requests", 1, 0, 99, upstreamTS, "jsonl",
			"iggy/raw/app_logs/api_requests/2024-03-16/14/00001-00000000000000000000-00000000000000000099.jsonl"},
		{"no prefix, partition in template", "", "{stream}/{topic}/{partition}/{date}", "app_logs", "api_requests", 1, 100, 199, upstreamTS, "json",
			"app_logs/api_requests/1/2024-03-16/00001-00000000000000000100-00000000000000000199.json"},
		{"empty prefix", "", "{stream}", "app_logs", "api_requests", 1, 0, 0, upstreamTS, "jsonl",
			"app_logs/00001-00000000000000000000-00000000000000000000.jsonl"},
		{"prefix with trailing slash", "data/", "{topic}", "app_logs", "api_requests", 1, 5, 10, upstreamTS, "jsonl",
			"data/api_requests/00001-00000000000000000005-00000000000000000010.jsonl"},
		{"seed document example", "", defaultTemplate, "application_logs", "api_requests", 0, 0, 999,
			uint64(time.Date(2026, 3, 16, 14, 59, 59, 999999000, time.UTC).UnixMicro()), "jsonl",
			"application_logs/api_requests/2026-03-16/14/00000-00000000000000000000-00000000000000000999.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewNamer(tt.prefix, mustParse(t, tt.template), tt.ext).Partition(tt.stream, tt.topic, tt.partition).Object(tt.first, tt.last, tt.ts)
			if got != tt.want {
				t.Errorf("ObjectKey\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestObjectKeyRendering(t *testing.T) {
	ts := uint64(time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC).UnixMicro())
	tests := []struct {
		name, prefix, template, stream, topic string
		partition                             uint32
		ext, want                             string
	}{
		{"sanitised stream and topic", "", "{stream}/{topic}", "my//stream", "topic with spaces", 7, "jsonl",
			"my__stream/topic_with_spaces/00007-00000000000000000001-00000000000000000002.jsonl"},
		{"multibyte rune becomes one underscore", "", "{stream}", "zürich€", "t", 0, "bin",
			"z_rich_/00000-00000000000000000001-00000000000000000002.bin"},
		{"hive style", "lake", "dt={date}/hour={hour}", "s", "t", 3, "jsonl.gz",
			"lake/dt=2025-01-02/hour=03/00003-00000000000000000001-00000000000000000002.jsonl.gz"},
		{"finer fields", "", "{year}/{month}/{day}/{hour}/{minute}", "s", "t", 3, "json.zst",
			"2025/01/02/03/04/00003-00000000000000000001-00000000000000000002.json.zst"},
		{"timestamp is epoch millis, partition unpadded", "", "{timestamp}/{partition}", "s", "t", 42, "jsonl",
			"1735787045678/42/00042-00000000000000000001-00000000000000000002.jsonl"},
		{"prefix trimmed both ends", "//a/b//", "{topic}", "s", "t", 1, "jsonl",
			"a/b/t/00001-00000000000000000001-00000000000000000002.jsonl"},
		{"prefix of only slashes omitted", "///", "{topic}", "s", "t", 1, "jsonl",
			"t/00001-00000000000000000001-00000000000000000002.jsonl"},
		{"partition wider than 5 digits not truncated", "", "{stream}", "s", "t", 1234567, "jsonl",
			"s/1234567-00000000000000000001-00000000000000000002.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewNamer(tt.prefix, mustParse(t, tt.template), tt.ext).Partition(tt.stream, tt.topic, tt.partition).Object(1, 2, ts)
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestObjectKeyLexicalOrder(t *testing.T) {
	tpl := mustParse(t, "{stream}/{topic}")
	ranges := [][2]uint64{{0, 999}, {999000, 999999}, {1000000, 1000999}, {9999999999, 10000000000}, {1<<64 - 2, 1<<64 - 1}}
	var keys []string
	for _, r := range ranges {
		keys = append(keys, NewNamer("", tpl, "jsonl").Partition("s", "t", 1).Object(r[0], r[1], upstreamTS))
	}
	if !sort.StringsAreSorted(keys) {
		t.Errorf("keys in offset order are not in lexical order: %q", keys)
	}
}

func TestAppendObjectMatchesAndDoesNotAllocate(t *testing.T) {
	tpl := mustParse(t, "{stream}/{topic}/{date}/{hour}/{minute}/{timestamp}/{partition}")
	want := NewNamer("p", tpl, "jsonl").Partition("a b", "c", 9).Object(10, 20, upstreamTS)
	buf := make([]byte, 0, 256)
	pn := NewNamer("p", tpl, "jsonl").Partition("a b", "c", 9)
	if got := string(pn.AppendObject(buf, 10, 20, upstreamTS)); got != want {
		t.Fatalf("AppendObject = %s, Object = %s", got, want)
	}
	allocs := testing.AllocsPerRun(100, func() {
		buf = pn.AppendObject(buf[:0], 10, 20, upstreamTS)
	})
	if allocs != 0 {
		t.Errorf("AppendObject allocates %.0f times per key, want 0", allocs)
	}
}

func TestParseTemplateErrors(t *testing.T) {
	tests := []struct {
		template string
		wantText []string
	}{
		{"", []string{"empty"}},
		{"{stream}/{minutes}", []string{"{minutes}", "{stream}", "{minute}", "{timestamp}"}},
		{"{}", []string{"unknown placeholder {}"}},
		{"{stream", []string{"'{'", "byte 0", "not closed"}},
		{"a/{b/{stream}", []string{"'{'", "byte 2"}},
		{"stream}", []string{"'}'", "byte 6"}},
		{"{{stream}}", []string{"'{'", "byte 0"}},
		{"{Stream}", []string{"unknown placeholder {Stream}"}},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			tpl, err := ParseTemplate(tt.template)
			if err == nil {
				t.Fatalf("ParseTemplate(%q) = %q, want error", tt.template, tpl.String())
			}
			if !errors.Is(err, ErrInvalidTemplate) {
				t.Errorf("error %v does not wrap ErrInvalidTemplate", err)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseTemplateString(t *testing.T) {
	for _, s := range []string{"{stream}/{topic}/{date}/{hour}", "plain", "dt={date}/hour={hour}", "{year}{month}{day}"} {
		if got := mustParse(t, s).String(); got != s {
			t.Errorf("String() = %q, want %q", got, s)
		}
	}
}

func TestParseObjectName(t *testing.T) {
	tests := []struct {
		key         string
		ok          bool
		partition   uint32
		first, last uint64
		ext         string
	}{
		{"00001-00000000000000000000-00000000000000000099.jsonl.gz", true, 1, 0, 99, "jsonl.gz"},
		{"iggy/raw/a/b/2024-03-16/14/00001-00000000000000000100-00000000000000000199.json", true, 1, 100, 199, "json"},
		{"x/1234567-00000000000000000005-00000000000000000005.bin", true, 1234567, 5, 5, "bin"},
		{"x/4294967295-18446744073709551614-18446744073709551615.jsonl", true, 1<<32 - 1, 1<<64 - 2, 1<<64 - 1, "jsonl"},
		{"00001-00000000000000000000-00000000000000000099.", false, 0, 0, 0, ""},           // empty ext
		{"00001-00000000000000000000-00000000000000000099", false, 0, 0, 0, ""},            // no ext
		{"0001-00000000000000000000-00000000000000000099.jsonl", false, 0, 0, 0, ""},       // partition too short
		{"000001-00000000000000000000-00000000000000000099.jsonl", false, 0, 0, 0, ""},     // not canonical padding
		{"00001-0000000000000000000-00000000000000000099.jsonl", false, 0, 0, 0, ""},       // 19-digit first
		{"00001-00000000000000000100-00000000000000000099.jsonl", false, 0, 0, 0, ""},      // first > last
		{"00001-99999999999999999999-99999999999999999999.jsonl", false, 0, 0, 0, ""},      // > MaxUint64
		{"4294967296-00000000000000000000-00000000000000000001.jsonl", false, 0, 0, 0, ""}, // > MaxUint32
		{"0000a-00000000000000000000-00000000000000000001.jsonl", false, 0, 0, 0, ""},
		{"00001-0000000000000000000+-00000000000000000001.jsonl", false, 0, 0, 0, ""},
		{".iggy-sink-probe", false, 0, 0, 0, ""},
		{"", false, 0, 0, 0, ""},
		{"a/b/", false, 0, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			p, f, l, ext, ok := ParseObjectName(tt.key)
			if ok != tt.ok || p != tt.partition || f != tt.first || l != tt.last || ext != tt.ext {
				t.Errorf("ParseObjectName(%q) = %d, %d, %d, %q, %v; want %d, %d, %d, %q, %v",
					tt.key, p, f, l, ext, ok, tt.partition, tt.first, tt.last, tt.ext, tt.ok)
			}
		})
	}
}

func TestListPrefix(t *testing.T) {
	tests := []struct {
		prefix, template string
		partition        uint32
		want             string
	}{
		{"iggy/raw", "{stream}/{topic}/{date}/{hour}", 1, "iggy/raw/my_stream/t/"},
		{"", "{stream}/{topic}/{partition}/{date}", 12, "my_stream/t/12/"},
		{"/lake/", "dt={date}/hour={hour}", 1, "lake/dt="},
		{"", "{timestamp}", 1, ""},
		{"", "{stream}/{topic}/{partition}", 3, "my_stream/t/3/"},
		{"p", "{topic}", 123456, "p/t/"},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			tpl := mustParse(t, tt.template)
			got := NewNamer(tt.prefix, tpl, "jsonl").Partition("my stream", "t", tt.partition).ListPrefix()
			if got != tt.want {
				t.Errorf("ListPrefix = %q, want %q", got, tt.want)
			}
			// Every object of that partition must be listed under the prefix.
			for _, ts := range []uint64{0, upstreamTS, uint64(time.Date(2031, 12, 31, 23, 59, 0, 0, time.UTC).UnixMicro())} {
				pn := NewNamer(tt.prefix, tpl, "jsonl").Partition("my stream", "t", tt.partition)
				for _, key := range []string{pn.Object(5, 9, ts), pn.Gap(5, 9, ts), pn.Hole(5, 9, ts)} {
					if !strings.HasPrefix(key, got) {
						t.Errorf("key %q is not under list prefix %q", key, got)
					}
				}
			}
		})
	}
}

func TestSanitize(t *testing.T) {
	tests := map[string]string{
		"app_logs":          "app_logs",
		"A-Z.a-z_0-9":       "A-Z.a-z_0-9",
		"my//stream":        "my__stream",
		"topic with spaces": "topic_with_spaces",
		"../etc":            ".._etc",
		"日本":                "__",
		"a{topic}b":         "a_topic_b",
		"":                  "",
	}
	for in, want := range tests {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPlaceholdersAllParse(t *testing.T) {
	all := strings.Join(Placeholders(), "/")
	if len(Placeholders()) != 10 {
		t.Fatalf("Placeholders() = %v, want the 10 documented ones", Placeholders())
	}
	if _, err := ParseTemplate(all); err != nil {
		t.Fatalf("template of every placeholder %q: %v", all, err)
	}
}

// TestGenerationNames: generation 0 keeps upstream's names; a re-created
// partition's objects carry "-g<n>" and parse back; nothing else parses.
func TestGenerationNames(t *testing.T) {
	pn := NewNamer("p", mustParse(t, "{stream}/{topic}"), "jsonl.gz").Partition("s", "t", 7)
	if got, want := pn.Object(0, 99, upstreamTS), "p/s/t/00007-00000000000000000000-00000000000000000099.jsonl.gz"; got != want {
		t.Fatalf("generation 0: %s, want %s", got, want)
	}
	g2 := pn.Generation(2)
	for _, tt := range []struct {
		key  string
		want Name
	}{
		{g2.Object(0, 99, upstreamTS), Name{Partition: 7, First: 0, Last: 99, Generation: 2, Ext: "jsonl.gz"}},
		{g2.Gap(5, 9, upstreamTS), Name{Partition: 7, First: 5, Last: 9, Generation: 2, Gap: true, Ext: GapExt}},
		{pn.Gap(5, 9, upstreamTS), Name{Partition: 7, First: 5, Last: 9, Gap: true, Ext: GapExt}},
	} {
		got, ok := ParseName(tt.key)
		if !ok || got != tt.want {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", tt.key, got, ok, tt.want)
		}
	}
	if !strings.HasSuffix(g2.Object(0, 99, upstreamTS), "-00000000000000000099-g2.jsonl.gz") {
		t.Errorf("generation 2 name %s", g2.Object(0, 99, upstreamTS))
	}
	for _, bad := range []string{
		"00007-00000000000000000000-00000000000000000099-g0.jsonl",
		"00007-00000000000000000000-00000000000000000099-g02.jsonl",
		"00007-00000000000000000000-00000000000000000099-g.jsonl",
		"00007-00000000000000000000-00000000000000000099-g2",
		"00007-00000000000000000000-00000000000000000099-gx.jsonl",
		"00007-00000000000000000000-00000000000000000099-g4294967296.jsonl",
	} {
		if n, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) = %+v, want no match", bad, n)
		}
	}
	if _, _, _, _, ok := ParseObjectName(g2.Object(0, 99, upstreamTS)); ok {
		t.Error("ParseObjectName accepted a generation name; it reads upstream names only")
	}
}

func TestVoidMarker(t *testing.T) {
	pn := NewNamer("p", mustParse(t, "{stream}/{date}"), "jsonl.zst").Partition("s", "t", 2).Generation(3)
	key := pn.Object(10, 19, upstreamTS)
	marker, ok := VoidMarker(key)
	if !ok || !strings.HasSuffix(marker, "/_00002-00000000000000000010-00000000000000000019-g3.jsonl.zst.void") {
		t.Fatalf("VoidMarker(%q) = %q, %v", key, marker, ok)
	}
	if marker[:strings.LastIndexByte(marker, '/')] != key[:strings.LastIndexByte(key, '/')] {
		t.Fatalf("marker %q is not in the object's folder", marker)
	}
	n, ok := ParseName(marker)
	if !ok || !n.Void || n.Gap || n.First != 10 || n.Last != 19 || n.Generation != 3 || n.Ext != "jsonl.zst" {
		t.Fatalf("ParseName(%q) = %+v, %v", marker, n, ok)
	}
	if back, ok := Voided(marker); !ok || back != key {
		t.Fatalf("Voided(%q) = %q, %v; want %q", marker, back, ok, key)
	}
	for _, bad := range []string{"p/notanobject.jsonl", pn.Gap(1, 2, upstreamTS)} {
		if m, ok := VoidMarker(bad); ok {
			t.Errorf("VoidMarker(%q) = %q, want none", bad, m)
		}
	}
}

// TestMarkerNames: gap and hole markers parse back as gap markers of their
// range, a hole marker as a hole, and neither as a data object.
func TestMarkerNames(t *testing.T) {
	pn := NewNamer("iggy", mustParse(t, "{stream}/{topic}"), "jsonl").Partition("s", "t", 3).Generation(2)
	for _, tc := range []struct {
		key                  string
		hole, skip, tooLarge bool
	}{
		{pn.Gap(10, 14, upstreamTS), false, false, false},
		{pn.Hole(10, 14, upstreamTS), true, false, false},
		{pn.Skip(10, 14, upstreamTS), false, true, false},
		{pn.TooLarge(10, 14, upstreamTS), false, false, true},
	} {
		n, ok := ParseName(tc.key)
		if !ok || !n.Gap || n.Hole != tc.hole || n.Skip != tc.skip || n.TooLarge != tc.tooLarge || n.First != 10 || n.Last != 14 || n.Partition != 3 || n.Generation != 2 {
			t.Errorf("ParseName(%q) = %+v, %v", tc.key, n, ok)
		}
		if _, ok := ParseName(strings.Replace(tc.key, "/_", "/", 1)); ok {
			t.Errorf("%q without its leading _ parses", tc.key)
		}
	}
	if got := pn.Hole(10, 14, upstreamTS); got != "iggy/s/t/_00003-00000000000000000010-00000000000000000014-g2.hole" {
		t.Errorf("hole marker %q", got)
	}
	if got := pn.TooLarge(10, 10, upstreamTS); got != "iggy/s/t/_00003-00000000000000000010-00000000000000000010-g2.toolarge" {
		t.Errorf("too-large marker %q", got)
	}
}

// A partition's matcher accepts its own keys at any time and refuses those
// of other topics, streams and partitions that share the listing prefix
// (time-first templates list every topic), and keys in deeper folders.
func TestMatcherHoldsOnlyThePartitionsKeys(t *testing.T) {
	for _, tpl := range []string{"dt={date}/{stream}/{topic}", "{stream}/{date}/{topic}", "{stream}/{topic}/{date}/{hour}",
		"{year}/{month}/{day}/{stream}/{topic}-p{partition}", "t={timestamp}/{topic}", "{stream}/{topic}"} {
		t.Run(tpl, func(t *testing.T) {
			tp, err := ParseTemplate(tpl)
			if err != nil {
				t.Fatal(err)
			}
			n := NewNamer("archive", tp, "jsonl").WithErrors("errs")
			mine := n.Partition("app", "logs", 3).Generation(2)
			holds, holdsErr := mine.Matcher(), mine.ErrorsMatcher()
			for _, ts := range []uint64{0, 1_710_597_751_000_000, 4_102_444_800_000_000} {
				for _, key := range []string{mine.Object(10, 20, ts), mine.Gap(21, 30, ts), mine.Hole(31, 31, ts)} {
					if !holds(key) {
						t.Errorf("its own key %q refused", key)
					}
					if holdsErr(key) {
						t.Errorf("data key %q taken for an error object", key)
					}
				}
				if key := mine.Errors(10, 20, ts); !holdsErr(key) || holds(key) {
					t.Errorf("error object %q: error matcher %v, data matcher %v", key, holdsErr(key), holds(key))
				}
				others := []PartitionNamer{n.Partition("app", "logs2", 3), n.Partition("app2", "logs", 3), n.Partition("ap", "plogs", 3)}
				if strings.Contains(tpl, "{partition}") {
					others = append(others, n.Partition("app", "logs", 30))
				}
				for _, o := range others {
					if key := o.Object(10, 20, ts); holds(key) && (strings.Contains(tpl, "{stream}") || o.path.stream == "app") {
						t.Errorf("%s/%s/%d's key %q taken for app/logs/3's", o.path.stream, o.path.topic, o.path.partition, key)
					}
				}
			}
			if key := mine.Object(1, 2, 0); holds("archive/x/"+key[len("archive/"):]) || holds(key[:len(key)-len(".jsonl")]+"/1-00000000000000000001-00000000000000000002.jsonl") {
				t.Error("a key in another folder was taken")
			}
		})
	}
}

// NextRevision names the same range in the same folder, one revision on,
// and ParseName reads every form back.
func TestNextRevision(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"a/b/00003-00000000000000000010-00000000000000000019.jsonl", "a/b/00003-00000000000000000010-00000000000000000019-r1.jsonl"},
		{"a/00003-00000000000000000010-00000000000000000019-g2.json.gz", "a/00003-00000000000000000010-00000000000000000019-g2-r1.json.gz"},
		{"00003-00000000000000000010-00000000000000000019-g2-r9.parquet", "00003-00000000000000000010-00000000000000000019-g2-r10.parquet"},
	} {
		got, ok := NextRevision(tc.key)
		if !ok || got != tc.want {
			t.Errorf("NextRevision(%q) = %q, %v; want %q", tc.key, got, ok, tc.want)
		}
		n, ok := ParseName(got)
		m, _ := ParseName(tc.key)
		if !ok || n.Revision != m.Revision+1 || n.First != 10 || n.Last != 19 || n.Generation != m.Generation || n.Ext != m.Ext {
			t.Errorf("ParseName(%q) = %+v, %v", got, n, ok)
		}
	}
	for _, bad := range []string{"00003-00000000000000000010-00000000000000000019-r0.jsonl", "00003-00000000000000000010-00000000000000000019-r01.jsonl",
		"00003-00000000000000000010-00000000000000000019-r1-g2.jsonl", "_00003-00000000000000000010-00000000000000000019.gap"} {
		if n, ok := ParseName(bad); ok && !n.Gap {
			t.Errorf("ParseName(%q) accepted a non-canonical data name: %+v", bad, n)
		}
		if _, ok := NextRevision(bad); ok {
			t.Errorf("NextRevision(%q) accepted it", bad)
		}
	}
}

// Listing bounds a time-free template's listing to the partition and its
// first offset on (data objects and markers apart), and leaves a time
// template's to ListPrefix.
func TestListing(t *testing.T) {
	tp, _ := ParseTemplate("{stream}/{topic}")
	pn := NewNamer("arch", tp, "jsonl").Partition("s", "t", 3)
	got := pn.Listing(100)
	want := [][2]string{
		{"arch/s/t/00003-", "arch/s/t/00003-00000000000000000100"},
		{"arch/s/t/_00003-", "arch/s/t/_00003-00000000000000000100"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Listing(100) = %v, want %v", got, want)
	}
	// Every key of offsets 100 on sorts after its start; those before not.
	for _, k := range []string{pn.Object(100, 120, 0), pn.Gap(100, 101, 0), pn.Object(1000, 1001, 0)} {
		l := got[0]
		if strings.HasPrefix(k, "arch/s/t/_") {
			l = got[1]
		}
		if !strings.HasPrefix(k, l[0]) || k <= l[1] {
			t.Errorf("%s is not listed by %v", k, l)
		}
	}
	if k := pn.Object(99, 99, 0); k > got[0][1] {
		t.Errorf("%s (before 100) is listed", k)
	}
	if got := pn.Listing(0); got[0][1] != "" || got[1][1] != "" {
		t.Errorf("Listing(0) = %v, want no start", got)
	}
	tt, _ := ParseTemplate("dt={date}/{stream}/{topic}")
	if got := NewNamer("arch", tt, "jsonl").Partition("s", "t", 3).Listing(100); len(got) != 1 || got[0] != [2]string{"arch/dt=", ""} {
		t.Errorf("time-first Listing = %v", got)
	}
}

// Generation markers sit in one folder per topic, whatever the template,
// so that a fresh state item finds every generation of its partition with
// one short listing.
func TestGenerationMarkerNames(t *testing.T) {
	n := NewNamer("archive/", mustParse(t, "dt={date}/{stream}/{topic}"), "jsonl")
	p := n.Partition("app", "orders v2", 3)
	for _, tc := range []struct {
		gen  uint32
		want string
	}{
		{0, "archive/_generations/app/orders_v2/00003-g0.json"},
		{1, "archive/_generations/app/orders_v2/00003-g1.json"},
		{4294967295, "archive/_generations/app/orders_v2/00003-g4294967295.json"},
	} {
		key := p.Generation(tc.gen).GenerationMarker()
		if key != tc.want {
			t.Errorf("generation %d: %q, want %q", tc.gen, key, tc.want)
		}
		if g, ok := p.ParseGenerationMarker(key); !ok || g != tc.gen {
			t.Errorf("ParseGenerationMarker(%q) = %d, %v", key, g, ok)
		}
	}
	for _, key := range []string{
		"archive/_generations/app/orders_v2/00003-g01.json",
		"archive/_generations/app/orders_v2/00003-g.json",
		"archive/_generations/app/orders_v2/00003-g1.json.tmp",
		"archive/_generations/app/orders_v2/00003-g4294967296.json",
		"archive/_generations/app/orders_v2/00013-g1.json",
		"archive/_generations/app/orders/00003-g1.json",
	} {
		if g, ok := p.ParseGenerationMarker(key); ok {
			t.Errorf("ParseGenerationMarker(%q) = %d, want refused", key, g)
		}
	}
}

// ListingAt bounds a time template's listing to the one folder of a server
// time: every key of the partition rendered at that time with a first
// offset from on is listed, and no key of another partition, of an
// earlier first offset, or of another time's folder.
func TestListingAt(t *testing.T) {
	day := uint64(86_400_000_000)
	ts := uint64(1_764_547_200_000_000) + 3*3_600_000_000 + 7 // 2025-12-01 03:00
	for _, src := range []string{"dt={date}/{stream}/{topic}", "{stream}/{date}/{topic}", "{stream}/{topic}/{year}/{month}/{day}/{hour}", "{stream}/{topic}", "t={timestamp}/{stream}/{topic}"} {
		tp := mustParse(t, src)
		n := NewNamer("arch", tp, "jsonl")
		pn := n.Partition("s", "t", 3)
		got := pn.ListingAt(100, ts)
		listed := func(k string) bool {
			l := got[0]
			if strings.HasPrefix(k[strings.LastIndexByte(k, '/')+1:], "_") {
				l = got[1]
			}
			return strings.HasPrefix(k, l[0]) && k > l[1]
		}
		for _, k := range []string{pn.Object(100, 120, ts), pn.Gap(100, 101, ts), pn.Object(1000, 1001, ts), pn.Generation(2).Object(100, 120, ts), pn.Skip(100, 200, ts)} {
			if !listed(k) {
				t.Errorf("%s: %s is not listed by %v", src, k, got)
			}
		}
		for _, k := range []string{pn.Object(99, 120, ts), n.Partition("s", "t", 4).Object(100, 120, ts), n.Partition("s", "u", 3).Object(100, 120, ts), n.Partition("s", "t", 30).Object(100, 120, ts)} {
			if listed(k) {
				t.Errorf("%s: %s is listed by %v", src, k, got)
			}
		}
		if pn.TimeFolders() {
			if k := pn.Object(100, 120, ts+day); listed(k) {
				t.Errorf("%s: %s (another day) is listed by %v", src, k, got)
			}
		} else if fmt.Sprint(got) != fmt.Sprint(pn.Listing(100)) {
			t.Errorf("%s: ListingAt = %v, want Listing's %v", src, got, pn.Listing(100))
		}
	}
}

func TestTemplatePeriod(t *testing.T) {
	for _, tc := range []struct {
		tpl  string
		want Period
	}{
		{"{stream}/{topic}/{date}/{hour}", PeriodHour},
		{"dt={date}/{stream}/{topic}", PeriodDay},
		{"{year}/{month}/{day}/{hour}/{minute}", PeriodMinute},
		{"{year}/{month}/{stream}", PeriodMonth},
		{"{stream}/{year}", PeriodYear},
		{"{stream}/{topic}", PeriodNone},
		{"t={timestamp}/{topic}", PeriodNone},
	} {
		if got := mustParse(t, tc.tpl).Period(); got != tc.want {
			t.Errorf("%s: Period() = %v, want %v", tc.tpl, got, tc.want)
		}
	}
}

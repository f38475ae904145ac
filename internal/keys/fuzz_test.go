package keys

import (
	"strconv"
	"strings"
	"testing"
)

func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"{stream}/{topic}/{date}/{hour}", "dt={date}/hour={hour}", "{", "}", "{}", "{x}", "{{stream}}", "a/{timestamp}/{partition}", "{stream}/c={payload.country}/{date}", "{payload.a.b}/{payload.c}"} {
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
		if tpl.HasValues() {
			// The unit's manifest; its value objects are ValueObject's.
			n, ok := ParseName(key)
			if !ok || !n.Manifest || n.Partition != 3 || n.First != 4 || n.Last != 5 || n.Ext != "jsonl" {
				t.Fatalf("ParseName(%q) = %+v %v, want the manifest of 4..5", key, n, ok)
			}
			pn := NewNamer("p", tpl, "jsonl").Partition("s t", "t/u", 3)
			segs := make([]string, len(tpl.PayloadFields()))
			for i := range segs {
				segs[i] = string(AppendValueSegment(nil, []byte("v/"+strconv.Itoa(i)), DefaultValueSegment))
			}
			vk, ok := pn.ValueObject(key, upstreamTS, segs)
			if !ok || !pn.Matcher()(vk) || !strings.HasPrefix(vk, pn.ListPrefix()) {
				t.Fatalf("ValueObject(%q) = %q %v: not one of the partition's keys", key, vk, ok)
			}
			key = vk
		}
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

// maxFuzzTS is 9999-12-31T23:59:59Z in microseconds: years have four digits
// below it, as every Iggy server timestamp does.
const maxFuzzTS = 253402300799999999

// FuzzKeysStayUnderPrefix: for any prefix and template the configuration
// accepts and any stream and topic names, every key (objects and gap
// markers) stays under the prefix with no empty, "." or ".." part, and two
// different (stream, topic) pairs that Collision accepts never share a key.
func FuzzKeysStayUnderPrefix(f *testing.F) {
	f.Add("arch", "{stream}/{topic}/{date}/{hour}", "..", "t", "__", "t", uint64(1), uint64(2), uint32(0), uint32(0))
	f.Add("../", "../../{stream}", ".", "", "x", "y", uint64(0), uint64(0), uint32(1), uint32(1))
	f.Add("p", "{stream}-{topic}", "a-b", "c", "a", "b-c", upstreamTS, upstreamTS, uint32(0), uint32(0))
	f.Add("", "{stream}{timestamp}", "a1", "t", "a", "t", uint64(23000), uint64(123000), uint32(0), uint32(0))
	f.Add("p", "{topic}{partition}", "s", "a1", "s", "a", upstreamTS, upstreamTS, uint32(2), uint32(12))
	f.Add("p", "{stream}/{topic}", "app", "orders v2", "app", "orders_v2", upstreamTS, upstreamTS, uint32(0), uint32(0))
	f.Add("p", "{stream}_{date}", "s_2024-03-16", "t", "s", "t", upstreamTS, upstreamTS, uint32(0), uint32(0))
	f.Fuzz(func(t *testing.T, prefix, template, s1, t1, s2, t2 string, ts1, ts2 uint64, p1, p2 uint32) {
		tpl, err := ParseTemplate(template)
		if err != nil || CheckPrefix(prefix) != nil {
			return
		}
		ts1, ts2 = ts1%maxFuzzTS, ts2%maxFuzzTS
		errPrefix := strings.TrimPrefix(strings.Trim(prefix, "/")+"/_errors", "/")
		n := NewNamer(prefix, tpl, "jsonl").WithErrors(errPrefix)
		a, b := n.Partition(s1, t1, p1), n.Partition(s2, t2, p2)
		keyA, keyB := a.Object(7, 9, ts1), b.Object(7, 9, ts2)
		for _, k := range []string{keyA, keyB, a.Gap(7, 9, ts1), b.Gap(7, 9, ts2)} {
			checkUnderPrefix(t, prefix, k)
		}
		errA, errB := a.Errors(7, 9, ts1), b.Errors(7, 9, ts2)
		for _, k := range []string{errA, errB} {
			checkUnderPrefix(t, errPrefix, k)
		}
		if k, ok := n.ErrorsKey(keyA); !ok || k != errA {
			t.Fatalf("ErrorsKey(%q) = %q, %v; Errors gives %q", keyA, k, ok, errA)
		}
		if lp, _ := a.ErrorsListPrefix(); !strings.HasPrefix(errA, lp) {
			t.Fatalf("error object %q not under its list prefix %q", errA, lp)
		}
		if !strings.HasPrefix(keyA, a.ListPrefix()) {
			t.Fatalf("key %q not under its list prefix %q", keyA, a.ListPrefix())
		}
		pa, pb := Pair{s1, t1}, Pair{s2, t2}
		checkGenerationMarkers(t, prefix, a, b, pa, pb, keyA, p1, p2)
		if pa == pb || tpl.Collision([]Pair{pa, pb}) != nil {
			return
		}
		if keyA == keyB {
			t.Fatalf("%v and %v both render to %q under %q", pa, pb, keyA, template)
		}
		if a.Gap(7, 9, ts1) == b.Gap(7, 9, ts2) {
			t.Fatalf("%v and %v share the gap marker %q", pa, pb, a.Gap(7, 9, ts1))
		}
		if errA == errB {
			t.Fatalf("%v and %v share the error object %q", pa, pb, errA)
		}
	})
}

// checkGenerationMarkers checks, for FuzzKeysStayUnderPrefix, the
// generation markers of partition p1 of pa (namer a, data object keyA) and
// of partition p2 of pb (namer b): generation p2 of a's stays under prefix
// and reads back as nothing else, and different partitions do not share
// one.
func checkGenerationMarkers(t *testing.T, prefix string, a, b PartitionNamer, pa, pb Pair, keyA string, p1, p2 uint32) {
	t.Helper()
	gen := a.Generation(p2)
	mk := gen.GenerationMarker()
	checkUnderPrefix(t, prefix, mk)
	if g, ok := a.ParseGenerationMarker(mk); !ok || g != p2 {
		t.Fatalf("ParseGenerationMarker(%q) = %d, %v; want generation %d", mk, g, ok, p2)
	}
	if _, ok := a.ParseGenerationMarker(keyA); ok {
		t.Fatalf("data object %q reads as a generation marker", keyA)
	}
	if _, ok := ParseName(mk); ok {
		t.Fatalf("generation marker %q reads as an object or marker name", mk)
	}
	if (Segment(pa.Stream) != Segment(pb.Stream) || Segment(pa.Topic) != Segment(pb.Topic) || p1 != p2) && a.GenerationMarker() == b.GenerationMarker() {
		t.Fatalf("%v/%d and %v/%d share the generation marker %q", pa, p1, pb, p2, a.GenerationMarker())
	}
}

// FuzzParseErrorsName: an accepted error-object name is canonical, and
// never a data object's or a marker's.
func FuzzParseErrorsName(f *testing.F) {
	f.Add("a/_errors/00001-00000000000000000000-00000000000000000099.errors.jsonl")
	f.Add("00001-00000000000000000000-00000000000000000099-g3.errors.jsonl")
	f.Add("_00001-00000000000000000000-00000000000000000099.errors.jsonl")
	f.Fuzz(func(t *testing.T, key string) {
		n, ok := ParseErrorsName(key)
		if !ok {
			return
		}
		base := key[strings.LastIndexByte(key, '/')+1:]
		want := string(appendFileName(nil, n.Partition, n.First, n.Last))
		if n.Generation > 0 {
			want += "-g" + strconv.FormatUint(uint64(n.Generation), 10)
		}
		if want += "." + ErrorsExt; base != want {
			t.Fatalf("ParseErrorsName(%q) accepted a non-canonical name (re-renders as %q)", key, want)
		}
		if _, ok := ParseName(key); ok {
			t.Fatalf("%q is both an error object and a data object or marker", key)
		}
	})
}

// FuzzMatcher: for any template, names and time, a partition's matcher
// accepts every key its namer renders, and a listed key (any string the
// store returns) never makes it panic.
func FuzzMatcher(f *testing.F) {
	f.Add("dt={date}/{stream}/{topic}", "app", "logs", uint32(3), uint64(1_710_597_751_000_000), "dt=2024-03-16/app/logs/3-00000000000000000001-00000000000000000002.jsonl")
	f.Add("{stream}/{topic}/{date}/{hour}", "a b", "ü/x", uint32(0), uint64(0), "")
	f.Add("t={timestamp}/{topic}-{partition}", "s", "t", uint32(7), uint64(1<<62), "t=1/t-7/x")
	f.Fuzz(func(t *testing.T, tpl, stream, topic string, partition uint32, ts uint64, listed string) {
		tp, err := ParseTemplate(tpl)
		if err != nil || stream == "" || topic == "" {
			return
		}
		pn := NewNamer("p", tp, "jsonl").WithErrors("e").Partition(stream, topic, partition)
		holds, holdsErr := pn.Matcher(), pn.ErrorsMatcher()
		if key := pn.Object(1, 2, ts); !holds(key) {
			t.Fatalf("template %q, %q/%q/%d at %d: own key %q refused", tpl, stream, topic, partition, ts, key)
		}
		if key := pn.Errors(1, 2, ts); !holdsErr(key) {
			t.Fatalf("template %q: own error key %q refused", tpl, key)
		}
		_, _ = holds(listed), holdsErr(listed)
	})
}

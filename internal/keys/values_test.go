package keys

import (
	"strings"
	"testing"
)

func TestPayloadTemplate(t *testing.T) {
	tpl := mustParse(t, "{stream}/{topic}/country={payload.country}/{date}/{payload.user.tier}/{payload.country}")
	fields := tpl.PayloadFields()
	if len(fields) != 2 || strings.Join(fields[0], ".") != "country" || strings.Join(fields[1], ".") != "user.tier" {
		t.Fatalf("PayloadFields() = %v, want [country] [user tier]", fields)
	}
	if tpl.Period() != PeriodDay {
		t.Errorf("Period() = %v, want day (payload fields are no time)", tpl.Period())
	}
	pn := NewNamer("p", tpl, "jsonl").Partition("app", "orders", 2)
	unit := pn.Object(10, 19, upstreamTS)
	wantUnit := "p/app/orders/country=" + DefaultValueSegment + "/2024-03-16/" + DefaultValueSegment + "/" + DefaultValueSegment + "/_00002-00000000000000000010-00000000000000000019.jsonl.manifest"
	if unit != wantUnit {
		t.Fatalf("Object() = %q, want the manifest %q", unit, wantUnit)
	}
	n, ok := ParseName(unit)
	if !ok || !n.Manifest || n.Gap || n.Void || n.First != 10 || n.Last != 19 || n.Ext != "jsonl" {
		t.Fatalf("ParseName(manifest) = %+v %v", n, ok)
	}
	vk, ok := pn.ValueObject(unit, upstreamTS, []string{"DE", "gold"})
	if want := "p/app/orders/country=DE/2024-03-16/gold/DE/00002-00000000000000000010-00000000000000000019.jsonl"; !ok || vk != want {
		t.Fatalf("ValueObject() = %q %v, want %q", vk, ok, want)
	}
	if _, ok := pn.ValueObject(vk, upstreamTS, []string{"DE", "gold"}); ok {
		t.Error("ValueObject accepted a data object's key as a unit's")
	}
	if _, ok := pn.ValueObject(unit, upstreamTS, []string{"DE"}); ok {
		t.Error("ValueObject accepted one segment for two fields")
	}
	match := pn.Matcher()
	for _, k := range []string{unit, vk, pn.Gap(3, 9, upstreamTS)} {
		if !match(k) || !strings.HasPrefix(k, pn.ListPrefix()) {
			t.Errorf("%q is not matched under %q", k, pn.ListPrefix())
		}
	}
	if match("p/app/orders/country=DE/2024-03-16/gold/00002-00000000000000000010-00000000000000000019.jsonl") {
		t.Error("Matcher took a key with a folder missing")
	}
	if lp := pn.ListPrefix(); lp != "p/app/orders/country=" {
		t.Errorf("ListPrefix() = %q, want the folders before the first payload field", lp)
	}
	// The marker and manifest folder bounds the listing of a time-free template.
	free := NewNamer("p", mustParse(t, "{stream}/{payload.kind}"), "jsonl").Partition("s", "t", 0)
	l := free.Listing(5)
	if l[0][0] != "p/s/"+DefaultValueSegment+"/00000-" || l[1][0] != "p/s/"+DefaultValueSegment+"/_00000-" {
		t.Errorf("Listing() = %q, want the unit folder's", l)
	}
	if free.TimeFolders() {
		t.Error("TimeFolders() is set for a template with payload fields only")
	}
}

func TestManifestNames(t *testing.T) {
	pn := NewNamer("p", mustParse(t, "{payload.a}"), "parquet").Partition("s", "t", 1).Generation(2)
	unit := pn.Object(0, 9, upstreamTS)
	next, ok := NextRevision(unit)
	if !ok || next != "p/"+DefaultValueSegment+"/_00001-00000000000000000000-00000000000000000009-g2-r1.parquet.manifest" {
		t.Fatalf("NextRevision(%q) = %q %v", unit, next, ok)
	}
	if n, ok := ParseName(next); !ok || !n.Manifest || n.Revision != 1 || n.Generation != 2 {
		t.Fatalf("ParseName(%q) = %+v %v", next, n, ok)
	}
	vk, _ := pn.ValueObject(next, upstreamTS, []string{"x"})
	if want := "p/x/00001-00000000000000000000-00000000000000000009-g2-r1.parquet"; vk != want {
		t.Errorf("ValueObject(revision) = %q, want %q", vk, want)
	}
	void, ok := VoidMarker(unit)
	if !ok || void != "p/"+DefaultValueSegment+"/__00001-00000000000000000000-00000000000000000009-g2.parquet.manifest.void" {
		t.Fatalf("VoidMarker(%q) = %q %v", unit, void, ok)
	}
	if n, ok := ParseName(void); !ok || !n.Void || !n.Manifest {
		t.Fatalf("ParseName(%q) = %+v %v, want a manifest's void marker", void, n, ok)
	}
	if k, ok := Voided(void); !ok || k != unit {
		t.Errorf("Voided(%q) = %q %v, want %q", void, k, ok, unit)
	}
	if _, ok := NewNamer("p", mustParse(t, "{payload.a}"), "parquet").WithErrors("e").ErrorsKeyOf(unit); ok {
		t.Error("a manifest was given an error object")
	}
	for _, bad := range []string{
		"_00001-00000000000000000000-00000000000000000009.gap.manifest",
		"_00001-00000000000000000000-00000000000000000009.errors.jsonl.manifest",
		"__00001-00000000000000000000-00000000000000000009.jsonl.manifest",
		"00001-00000000000000000000-00000000000000000009.jsonl.manifest",
		"_00001-00000000000000000000-00000000000000000009.jsonl.manifest.manifest",
	} {
		if n, ok := ParseName("p/" + bad); ok && n.Manifest {
			t.Errorf("ParseName(%q) = %+v, a manifest", bad, n)
		}
	}
}

func TestPayloadTemplateErrors(t *testing.T) {
	for _, tc := range []struct{ tpl, want string }{
		{"{payload.}", "dotted path"},
		{"{payload.a..b}", "dotted path"},
		{"{payload}", "unknown placeholder"},
		{"{stream}-{payload.a}", "together"},
		{"{payload.a}-{payload.b}", "together"},
		{"{payload.a}{timestamp}", "together"},
	} {
		_, err := ParseTemplate(tc.tpl)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTemplate(%q) = %v, want an error saying %q", tc.tpl, err, tc.want)
		}
	}
	if _, err := ParseTemplate("country={payload.country}/{payload.a}_{date}"); err != nil {
		t.Errorf("a field with fixed text and fixed-width fields was refused: %v", err)
	}
}

func TestAppendValueSegment(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"DE", "DE"},
		{"42", "42"},
		{"a b", "a%20b"},
		{"São", "S%C3%A3o"},
		{"a/b", "a%2Fb"},
		{"..", "%2E."},
		{".", "%2E"},
		{"_errors", "%5Ferrors"},
		{"100%", "100%25"},
		{"", DefaultValueSegment},
		{DefaultValueSegment, "%5F_HIVE_DEFAULT_PARTITION__"},
	} {
		if got := string(AppendValueSegment(nil, []byte(tc.text), DefaultValueSegment)); got != tc.want {
			t.Errorf("AppendValueSegment(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	if got := string(AppendValueSegment(nil, []byte("none"), "none")); got != "%6Eone" {
		t.Errorf("a text equal to the default segment renders as %q, want its first byte escaped", got)
	}
	long := strings.Repeat("é", 100)
	got := string(AppendValueSegment(nil, []byte(long), DefaultValueSegment))
	if len(got) > MaxValueSegment || !strings.Contains(got, "~") {
		t.Errorf("a long value renders as %q (%d bytes), want at most %d ending in ~hash", got, len(got), MaxValueSegment)
	}
	if got == string(AppendValueSegment(nil, []byte(long+"x"), DefaultValueSegment)) {
		t.Error("two long values with the same start render alike")
	}
}

func TestCheckDefaultSegment(t *testing.T) {
	for _, ok := range []string{DefaultValueSegment, "unknown", "n-a"} {
		if err := CheckDefaultSegment(ok); err != nil {
			t.Errorf("CheckDefaultSegment(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "a/b", "a b", strings.Repeat("x", MaxValueSegment+1)} {
		if err := CheckDefaultSegment(bad); err == nil {
			t.Errorf("CheckDefaultSegment(%q) accepted it", bad)
		}
	}
}

// FuzzAppendValueSegment checks that a value's segment stays one safe,
// visible path part and that two texts never share one.
func FuzzAppendValueSegment(f *testing.F) {
	f.Add("DE", "de", "unknown")
	f.Add("_x", "%5Fx", DefaultValueSegment)
	f.Add("none", "%6Eone", "none")
	f.Fuzz(func(t *testing.T, a, b, def string) {
		if CheckDefaultSegment(def) != nil {
			return
		}
		sa := string(AppendValueSegment(nil, []byte(a), def))
		sb := string(AppendValueSegment(nil, []byte(b), def))
		for _, s := range []string{sa, sb} {
			if s == "" || s == "." || s == ".." || strings.ContainsRune(s, '/') || len(s) > MaxValueSegment {
				t.Fatalf("segment %q is not one path part", s)
			}
		}
		if a != "" && (sa == def || sa[0] == '_' || sa[0] == '.') {
			t.Fatalf("AppendValueSegment(%q) = %q: the default's, or hidden", a, sa)
		}
		if a != b && a != "" && b != "" && sa == sb {
			t.Fatalf("%q and %q both render as %q", a, b, sa)
		}
	})
}

func TestValueObjectKeepsTheUnitsFolders(t *testing.T) {
	tpl := mustParse(t, "{stream}/{topic}/c={payload.c}_{date}/{hour}")
	old := NewNamer("p/q", tpl, "jsonl.gz").WithFingerprint("0123abcd").Partition("old name", "t", 4).Generation(3)
	unit := old.Object(5, 9, upstreamTS)
	want := "p/q/old_name/t/c=" + DefaultValueSegment + "_2024-03-16/14/_00004-00000000000000000005-00000000000000000009-g3.jsonl.gz.0123abcd.manifest"
	if unit != want {
		t.Fatalf("Object() = %q, want %q", unit, want)
	}
	n, ok := ParseName(unit)
	if !ok || !n.Manifest || n.Fingerprint != "0123abcd" || n.Ext != "jsonl.gz" || n.Generation != 3 {
		t.Fatalf("ParseName(%q) = %+v %v", unit, n, ok)
	}
	if next, _ := NextRevision(unit); !strings.HasSuffix(next, "-g3-r1.jsonl.gz.0123abcd.manifest") {
		t.Errorf("NextRevision(%q) = %q: the fingerprint is lost", unit, next)
	}
	// Under the topic's new name the unit is finished in its own folders.
	renamed := NewNamer("p/q", tpl, "jsonl.gz").WithFingerprint("0123abcd").Partition("new", "t2", 4)
	vk, ok := renamed.ValueObject(unit, upstreamTS, []string{"DE"})
	if want := "p/q/old_name/t/c=DE_2024-03-16/14/00004-00000000000000000005-00000000000000000009-g3.jsonl.gz"; !ok || vk != want {
		t.Fatalf("ValueObject() = %q %v, want %q", vk, ok, want)
	}
	if _, ok := renamed.ValueObject("short/_00004-00000000000000000005-00000000000000000009.jsonl.gz.manifest", upstreamTS, []string{"DE"}); ok {
		t.Error("ValueObject took a unit key with fewer folders than the template has")
	}
}

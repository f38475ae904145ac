package keys

import (
	"strings"
	"testing"
)

func TestErrorObjectNames(t *testing.T) {
	tpl, err := ParseTemplate("{stream}/{topic}/{date}")
	if err != nil {
		t.Fatal(err)
	}
	const ts = 1_710_597_751_000_000 // 2024-03-16T14:02:31Z
	for _, tc := range []struct {
		prefix, errPrefix string
		gen               uint32
		data, errs        string
	}{
		{"archive", "archive/_errors", 0,
			"archive/app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019.parquet",
			"archive/_errors/app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019.errors.jsonl"},
		{"", "/_errors/", 2,
			"app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019-g2.parquet",
			"_errors/app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019-g2.errors.jsonl"},
		{"a/b", "elsewhere", 0,
			"a/b/app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019.parquet",
			"elsewhere/app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019.errors.jsonl"},
	} {
		n := NewNamer(tc.prefix, tpl, "parquet").WithErrors(tc.errPrefix)
		checkErrorObjectNames(t, n, n.Partition("app", "logs", 3).Generation(tc.gen), ts, tc.data, tc.errs)
	}
	plain := NewNamer("archive", tpl, "jsonl")
	if plain.Partition("app", "logs", 0).Errors(1, 2, ts) != "" {
		t.Error("a Namer without WithErrors named an error object")
	}
	n := plain.WithErrors("archive/_errors")
	for _, bad := range []string{
		"other/app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019.jsonl",
		"archive/app/logs/2024-03-16/00003-00000000000000000010-00000000000000000019.parquet",
		"archive/app/logs/2024-03-16/_00003-00000000000000000010-00000000000000000019.gap",
	} {
		if k, ok := n.ErrorsKey(bad); ok {
			t.Errorf("ErrorsKey(%q) = %q", bad, k)
		}
	}
}

// checkErrorObjectNames checks the error object of p's data object of
// offsets 10..19 at time ts: data is that object's key, errs its error
// object's.
func checkErrorObjectNames(t *testing.T, n *Namer, p PartitionNamer, ts uint64, data, errs string) {
	t.Helper()
	if got := p.Object(10, 19, ts); got != data {
		t.Fatalf("Object = %q, want %q", got, data)
	}
	if got := p.Errors(10, 19, ts); got != errs {
		t.Errorf("Errors = %q, want %q", got, errs)
	}
	if got, ok := n.ErrorsKey(data); !ok || got != errs {
		t.Errorf("ErrorsKey(%q) = %q, %v; want %q", data, got, ok, errs)
	}
	lp, ok := p.ErrorsListPrefix()
	if !ok || !strings.HasPrefix(errs, lp) {
		t.Errorf("ErrorsListPrefix %q does not lead to %q", lp, errs)
	}
	if _, ok := ParseName(errs); ok {
		t.Errorf("ParseName accepted the error object %q", errs)
	}
	nm, ok := ParseErrorsName(errs)
	if !ok || nm.First != 10 || nm.Last != 19 || nm.Partition != p.path.partition || nm.Generation != p.generation || nm.Ext != ErrorsExt {
		t.Errorf("ParseErrorsName(%q) = %+v, %v", errs, nm, ok)
	}
	if _, ok := ParseErrorsName(data); ok {
		t.Errorf("ParseErrorsName accepted the data object %q", data)
	}
}

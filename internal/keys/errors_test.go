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
		p := n.Partition("app", "logs", 3).Generation(tc.gen)
		if got := p.Object(10, 19, ts); got != tc.data {
			t.Fatalf("Object = %q, want %q", got, tc.data)
		}
		if got := p.Errors(10, 19, ts); got != tc.errs {
			t.Errorf("Errors = %q, want %q", got, tc.errs)
		}
		if got, ok := n.ErrorsKey(tc.data); !ok || got != tc.errs {
			t.Errorf("ErrorsKey(%q) = %q, %v; want %q", tc.data, got, ok, tc.errs)
		}
		lp, ok := p.ErrorsListPrefix()
		if !ok || !strings.HasPrefix(tc.errs, lp) {
			t.Errorf("ErrorsListPrefix %q does not lead to %q", lp, tc.errs)
		}
		if _, ok := ParseName(tc.errs); ok {
			t.Errorf("ParseName accepted the error object %q", tc.errs)
		}
		nm, ok := ParseErrorsName(tc.errs)
		if !ok || nm.First != 10 || nm.Last != 19 || nm.Partition != 3 || nm.Generation != tc.gen || nm.Ext != ErrorsExt {
			t.Errorf("ParseErrorsName(%q) = %+v, %v", tc.errs, nm, ok)
		}
		if _, ok := ParseErrorsName(tc.data); ok {
			t.Errorf("ParseErrorsName accepted the data object %q", tc.data)
		}
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

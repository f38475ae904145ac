package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	doc := `{"country":"DE","user":{"tier":"gold","id":7,"tags":[1,2]},"a\u0062":"esc","n":null,"dup":1,"dup":2}`
	for _, tc := range []struct {
		path string
		want string // "" for not found
	}{
		{"country", `"DE"`},
		{"user.tier", `"gold"`},
		{"user.id", `7`},
		{"user.tags", `[1,2]`},
		{"user", `{"tier":"gold","id":7,"tags":[1,2]}`},
		{"ab", `"esc"`},
		{"n", `null`},
		{"dup", `2`},
		{"missing", ``},
		{"country.code", ``},
		{"user.tags.0", ``},
		{"user.missing", ``},
	} {
		s, e, ok := Lookup([]byte(doc), strings.Split(tc.path, "."))
		got := ""
		if ok {
			got = doc[s:e]
		}
		if got != tc.want {
			t.Errorf("Lookup(%s) = %q, want %q", tc.path, got, tc.want)
		}
		sc := Scanner{Record: true}
		compact, _, _ := sc.AppendCompact(nil, []byte(doc))
		s, e, ok = LookupMembers(compact, sc.Members, strings.Split(tc.path, "."))
		got = ""
		if ok {
			got = string(compact[s:e])
		}
		if got != tc.want {
			t.Errorf("LookupMembers(%s) = %q, want %q", tc.path, got, tc.want)
		}
	}
	for _, notObject := range []string{`[1]`, `"x"`, `1`, `null`, ``} {
		if _, _, ok := Lookup([]byte(notObject), []string{"a"}); ok {
			t.Errorf("Lookup in %q found a member", notObject)
		}
	}
}

// FuzzLookup checks Lookup against encoding/json on compact documents: a
// member found is the one encoding/json decodes, and nothing panics.
func FuzzLookup(f *testing.F) {
	f.Add(`{"a":{"b":"c"}}`, "a.b")
	f.Add(`{"a":1,"a":{"b":2}}`, "a.b")
	f.Add(`{"\u00e9":true}`, "é")
	f.Fuzz(func(t *testing.T, src, path string) {
		var sc Scanner
		doc, ok, _ := sc.AppendCompact(nil, []byte(src))
		if !ok {
			return
		}
		parts := strings.Split(path, ".")
		s, e, found := Lookup(doc, parts)
		rec := Scanner{Record: true}
		if _, ok, _ := rec.AppendCompact(nil, doc); ok {
			ms, me, mfound := LookupMembers(doc, rec.Members, parts)
			if mfound != found || found && (ms != s || me != e) {
				t.Fatalf("LookupMembers(%q, %q) = %d..%d %v, Lookup %d..%d %v", doc, path, ms, me, mfound, s, e, found)
			}
		}
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			return
		}
		for _, p := range parts {
			m, isObj := v.(map[string]any)
			if !isObj {
				v = nil
				if found {
					t.Fatalf("Lookup(%q, %q) found %q; encoding/json finds no object on the way", doc, path, doc[s:e])
				}
				return
			}
			var has bool
			if v, has = m[p]; !has {
				if found {
					t.Fatalf("Lookup(%q, %q) found %q; encoding/json finds no member %q", doc, path, doc[s:e], p)
				}
				return
			}
		}
		if !found {
			t.Fatalf("Lookup(%q, %q) found nothing; encoding/json finds %v", doc, path, v)
		}
		var got any
		if err := json.Unmarshal(doc[s:e], &got); err != nil {
			t.Fatalf("Lookup(%q, %q) = %q, not a value: %v", doc, path, doc[s:e], err)
		}
		want, _ := json.Marshal(v)
		have, _ := json.Marshal(got)
		if string(want) != string(have) {
			t.Fatalf("Lookup(%q, %q) = %s, encoding/json: %s", doc, path, have, want)
		}
	})
}

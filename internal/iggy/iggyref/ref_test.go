package iggyref

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]Ref{
		"orders":         {Name: "orders"},
		"1":              {ID: 1, ByID: true},
		"0":              {ID: 0, ByID: true},
		"4294967295":     {ID: 4294967295, ByID: true},
		"4294967296":     {Name: "4294967296"},
		"01":             {ID: 1, ByID: true},
		"name:1":         {Name: "1"},
		"name:name:x":    {Name: "name:x"},
		"name:":          {Name: ""},
		"-1":             {Name: "-1"},
		"12345678901":    {Name: "12345678901"},
		"Name:1":         {Name: "Name:1"},
		"orders v2":      {Name: "orders v2"},
		"name:orders v2": {Name: "orders v2"},
	} {
		if got := Parse(in); got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", in, got, want)
		}
	}
}

package editdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"state", "state", 0},
		{"iggy-s3-sink-state", "iggy-s3-sink-stat", 1}, {"kitten", "sitting", 3}, {"max_file_size", "max_filesize", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	keys := []string{"bucket", "prefix", "path_template", "max_file_size"}
	for s, want := range map[string]string{"buckt": "bucket", "max_filesize": "max_file_size", "path_templat": "path_template"} {
		if got := Closest(s, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", s, got, want)
		}
	}
	if got := Closest("x", nil); got != "" {
		t.Errorf("Closest with no candidates = %q", got)
	}
}

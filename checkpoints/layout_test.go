package checkpoints

import (
	"regexp"
	"strings"
	"testing"
)

// sessionSpec is the rule ValidSession implements, as a regexp: the test
// holds the two to the same answers.
var sessionSpec = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

func TestValidSession(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"", false},
		{"a", true},
		{"ws-f852922c7b6f", true},
		{"0.1_x-Y", true},
		{"-", true},
		{"_", true},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"a.", true},
		{"a/b", false},
		{"a\\b", false},
		{"a b", false},
		{"a\n", false},
		{"é", false},
		{"a\x00", false},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
	} {
		if got := ValidSession(tc.id); got != tc.want {
			t.Errorf("ValidSession(%q) = %v, want %v", tc.id, got, tc.want)
		}
		if got := sessionSpec.MatchString(tc.id); got != tc.want {
			t.Errorf("spec(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func FuzzValidSession(f *testing.F) {
	for _, s := range []string{"a", ".a", "a/b", strings.Repeat("x", 128), "a\n", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidSession(id), sessionSpec.MatchString(id); got != want {
			t.Errorf("ValidSession(%q) = %v, the rule says %v", id, got, want)
		}
	})
}

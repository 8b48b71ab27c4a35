package main

import (
	"strconv"
	"testing"
)

func TestQpath(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"a/b.txt", "a/b.txt"},
		{"héllo/ünï.txt", "héllo/ünï.txt"},
		{"new\nline", `"new\nline"`},
		{"tab\there", `"tab\there"`},
		{`q"uote`, `"q\"uote"`},
		{`back\slash`, `"back\\slash"`},
		{"bad\xffutf8", `"bad\377utf8"`},
		{"bell\x07", `"bell\a"`},
		{"esc\x1b[31m", `"esc\033[31m"`},
		{"del\x7f", `"del\177"`},
	} {
		if got := qpath(tt.in); got != tt.want {
			t.Errorf("qpath(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestQpathRoundTrip: a quoted name read back with C/Go-style unquoting
// gives the original bytes, so a program can parse text output too.
func TestQpathRoundTrip(t *testing.T) {
	for _, in := range []string{"plain", "a\nb", "x\xfe\xffy", "\x00\x01\x1f", `"\`, "ok é"} {
		q := qpath(in)
		if q == in {
			continue
		}
		back, err := strconv.Unquote(q)
		if err != nil || back != in {
			t.Errorf("Unquote(%s) = %q, %v; want %q", q, back, err, in)
		}
	}
}

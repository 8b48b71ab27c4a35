package msg

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestOneLine(t *testing.T) {
	err := errors.Join(fmt.Errorf("controller: rewind: %w", errors.New("checkpoints: index: locked")), errors.New("cas: blob abc: missing\n"))
	if got, want := OneLine(err), "rewind: index: locked; blob abc: missing"; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 files", 1: "1 file", 2: "2 files"} {
		if got := Plural(n, "file"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzAppendShort(f *testing.F) {
	for _, s := range []string{"", "a", "  lead and trail  ", "tab\there\nnewline", strings.Repeat("word ", 20), strings.Repeat("ü", 60),
		"\xff\xfe invalid " + strings.Repeat("x", 50), "nbsp\u00a0sep\u2003em", strings.Repeat("a", 48), strings.Repeat("a", 49)} {
		f.Add(s, 48)
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 1 || n > 200 {
			return
		}
		want := Shorten(s, n)
		got := string(AppendShort([]byte("prefix "), s, n))
		if got != "prefix "+want {
			t.Errorf("AppendShort(%q, %d) = %q, want %q", s, n, got, "prefix "+want)
		}
	})
}

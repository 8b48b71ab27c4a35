package text

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorLine(t *testing.T) {
	err := errors.Join(fmt.Errorf("controller: rewind: %w", errors.New("checkpoints: index: locked")), errors.New("cas: blob abc: missing\n"))
	if got, want := ErrorLine(err), "rewind: index: locked; blob abc: missing"; got != want {
		t.Errorf("ErrorLine = %q, want %q", got, want)
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 files", 1: "1 file", 2: "2 files"} {
		if got := Plural(n, "file"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

package progress

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressDrawsAndClears(t *testing.T) {
	t.Run("known total", func(t *testing.T) {
		var b bytes.Buffer
		p := New(&b, "verifying blobs", 1000)
		p.Set(500)
		drawn := b.String()
		for _, want := range []string{"verifying blobs", "50%", "(500/1000)"} {
			if !strings.Contains(drawn, want) {
				t.Errorf("drawn %q, want %q in it", drawn, want)
			}
		}
		p.Done()
		// Finishing clears the line: the last thing written is a carriage
		// return after blanks, so the summary starts on a clean line.
		rest := b.String()[len(drawn):]
		if !strings.HasSuffix(rest, "\r") || strings.Trim(rest, " \r") != "" {
			t.Errorf("after done: %q, want only blanks and carriage returns", rest)
		}
	})
	t.Run("unknown total", func(t *testing.T) {
		var b bytes.Buffer
		p := New(&b, "scanning blobs", -1)
		p.Set(4096)
		if s := b.String(); !strings.Contains(s, "scanning blobs") || !strings.Contains(s, "(4096)") || strings.Contains(s, "%") {
			t.Errorf("drawn %q, want the description and a count, no percentage", s)
		}
		p.Count()(8192)
		p.Done()
	})
	t.Run("never told", func(t *testing.T) {
		var b bytes.Buffer
		New(&b, "nothing", 10).Done()
		if b.Len() != 0 {
			t.Errorf("a display never set drew %q", b.String())
		}
	})
	t.Run("nil", func(t *testing.T) {
		var p *Bar
		p.Set(1)
		p.Clear()
		p.Done()
		if p.Count() != nil {
			t.Error("a nil progress gives a callback")
		}
	})
}

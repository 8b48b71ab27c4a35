package quote_test

import (
	"strconv"
	"testing"

	"github.com/ckpt/ckpt/internal/quote"
	"github.com/ckpt/ckpt/internal/quote/quotetest"
)

func TestPath(t *testing.T) {
	t.Parallel()
	for _, tt := range quotetest.Cases {
		if got := quote.Path(tt.In); got != tt.Want {
			t.Errorf("Path(%q) = %s, want %s", tt.In, got, tt.Want)
		}
	}
}

// TestPathRoundTrip: a quoted name read back with C/Go-style unquoting
// gives the original bytes, so a program can parse text output too.
func TestPathRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tt := range quotetest.Cases {
		q := quote.Path(tt.In)
		if q == tt.In {
			continue
		}
		back, err := strconv.Unquote(q)
		if err != nil || back != tt.In {
			t.Errorf("Unquote(%s) = %q, %v; want %q", q, back, err, tt.In)
		}
	}
}

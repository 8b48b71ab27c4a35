package token

import "testing"

func TestTokenBits(t *testing.T) {
	for tok, want := range map[string]float64{"": 0, "aaaaaaaa": 0, "0123": 4 * 3.321928094887362, "0123456789abcdef0123456789abcdef": 128} {
		if got := Bits(tok); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("Bits(%q) = %g, want %g", tok, got, want)
		}
	}
	tok, err := New()
	if err != nil || len(tok) != 32 || Bits(tok) < MinBits {
		t.Errorf("New = %q, %v", tok, err)
	}
}

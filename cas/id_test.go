package cas_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

func TestSum(t *testing.T) {
	t.Parallel()
	// BLAKE3-256 test vector for the empty input.
	const empty = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := cas.Sum(nil).String(); got != empty {
		t.Errorf("Sum(nil) = %s, want %s", got, empty)
	}
	if cas.Sum([]byte("a")) == cas.Sum([]byte("b")) {
		t.Error("Sum of different inputs is equal")
	}
}

func TestParseID(t *testing.T) {
	t.Parallel()
	valid := cas.Sum([]byte("x")).String()
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"valid", valid, true},
		{"empty", "", false},
		{"short", valid[:63], false},
		{"long", valid + "0", false},
		{"uppercase", strings.ToUpper(valid), false},
		{"not hex", "g" + valid[1:], false},
		{"space", " " + valid[1:], false},
		{"zero", strings.Repeat("0", 64), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := cas.ParseID(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseID(%q) = %v, %v; want ok %v", tt.in, id, err, tt.ok)
			}
			if tt.ok && id.String() != tt.in {
				t.Errorf("ParseID(%q).String() = %q", tt.in, id.String())
			}
			if !tt.ok && !id.IsZero() {
				t.Errorf("ParseID(%q) failed but returned %v", tt.in, id)
			}
		})
	}
}

func FuzzParseID(f *testing.F) {
	f.Add(cas.Sum([]byte("x")).String())
	f.Add(strings.Repeat("0", 64))
	f.Add(strings.Repeat("F", 64))
	f.Fuzz(func(t *testing.T, s string) {
		id, err := cas.ParseID(s)
		if err != nil {
			return
		}
		if id.IsZero() || id.String() != s {
			t.Errorf("ParseID(%q) = %s, which does not round-trip", s, id)
		}
	})
}

func TestIDMethods(t *testing.T) {
	t.Parallel()
	id := cas.Sum([]byte("hello"))
	if s := id.Short(); len(s) != 12 || !strings.HasPrefix(id.String(), s) {
		t.Errorf("Short() = %q, want the first 12 of %q", s, id.String())
	}
	if id.IsZero() || !(cas.ID{}).IsZero() {
		t.Error("IsZero wrong")
	}

	b, err := json.Marshal(map[string]cas.ID{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]cas.ID
	if err := json.Unmarshal(b, &back); err != nil || back["id"] != id {
		t.Errorf("JSON round trip of %s = %s, %v", b, back["id"], err)
	}
	if _, err := json.Marshal(cas.ID{}); err == nil {
		t.Error("marshalling the zero ID succeeded")
	}

	v, err := id.Value()
	if err != nil {
		t.Fatal(err)
	}
	var scanned cas.ID
	if err := scanned.Scan(v); err != nil || scanned != id {
		t.Errorf("Scan(Value()) = %s, %v; want %s", scanned, err, id)
	}
	for _, bad := range []any{nil, "text", make([]byte, 31), make([]byte, 32)} {
		if err := scanned.Scan(bad); err == nil {
			t.Errorf("Scan(%#v) succeeded", bad)
		}
	}
	if _, err := (cas.ID{}).Value(); err == nil {
		t.Error("Value of the zero ID succeeded")
	}
}

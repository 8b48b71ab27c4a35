package units

import (
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"12h", 12 * time.Hour, true},
		{"100000d", 100000 * 24 * time.Hour, true},
		{"100001d", 0, false},
		{"1e30d", 0, false},
		{"NaNd", 0, false},
		{"infd", 0, false},
		{"-1d", 0, false},
		{"-1h", 0, false},
		{"", 0, false},
		{"soon", 0, false},
	} {
		got, err := ParseAge(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"2GiB", 2 << 30, true},
		{"500MB", 500e6, true},
		{"-5", 0, false},
		{"", 0, false},
		{"1e30", 0, false},
	} {
		got, err := ParseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBytes(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Package units reads and writes the sizes and ages people type and read:
// "30d", "12h", "500MB", "2GiB". The store's retention config and every
// front-end's flags and messages use it, so they agree.
package units

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// maxDays is the largest age in days ParseAge takes.
const maxDays = 100000

// ParseAge parses a duration that may also be in days ("30d"); "0" is no
// limit.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(d, 64)
		// NaN fails every comparison; the bound keeps the product inside
		// a Duration (which holds about 106751 days).
		if err != nil || !(n >= 0 && n <= maxDays) {
			return 0, fmt.Errorf("%q is not a number of days from 0 to %d", s, maxDays)
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration like 30d, 12h or 90m", s)
	}
	return d, nil
}

// ParseBytes parses a size like "500MB", "2GiB" or "0" (no quota).
func ParseBytes(s string) (int64, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil || n > 1<<62 {
		return 0, fmt.Errorf("%q is not a size like 500MB or 2GiB", s)
	}
	return int64(n), nil
}

// FormatBytes prints a byte count for people (IEC units).
func FormatBytes(n int64) string { return humanize.IBytes(uint64(n)) }

package retention

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// ConfigFile is the retention settings file in a store directory.
const ConfigFile = "config.json"

// Config is the JSON form of a Policy, as people write it:
//
//	{"max_age": "30d", "keep_turns": 100, "max_bytes": "2GiB", "grace": "0s", "auto": true}
//
// Every field is optional; missing ones take DefaultPolicy's value, and
// "0" turns a limit off. auto (default true) lets ckpt apply the policy by
// itself at most once a day, and whenever a new turn finds the store over
// max_bytes.
type Config struct {
	MaxAge    string `json:"max_age,omitempty"`
	KeepTurns *int   `json:"keep_turns,omitempty"`
	MaxBytes  string `json:"max_bytes,omitempty"`
	Grace     string `json:"grace,omitempty"`
	Auto      *bool  `json:"auto,omitempty"`
}

// LoadConfig reads STORE/config.json; a missing file gives the defaults.
// It returns the policy and whether automatic retention is on.
func LoadConfig(store string) (Policy, bool, error) {
	b, err := os.ReadFile(filepath.Join(store, ConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultPolicy(), true, nil
	}
	if err != nil {
		return Policy{}, false, fmt.Errorf("retention: config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Policy{}, false, fmt.Errorf("retention: config %s: %w", filepath.Join(store, ConfigFile), err)
	}
	p, err := c.Apply(DefaultPolicy())
	if err != nil {
		return Policy{}, false, fmt.Errorf("retention: config %s: %w", filepath.Join(store, ConfigFile), err)
	}
	return p, c.Auto == nil || *c.Auto, nil
}

// Apply overrides p with the fields c sets.
func (c Config) Apply(p Policy) (Policy, error) {
	var err error
	if c.MaxAge != "" {
		if p.MaxAge, err = ParseAge(c.MaxAge); err != nil {
			return p, fmt.Errorf("max_age: %w", err)
		}
	}
	if c.KeepTurns != nil {
		if *c.KeepTurns < 0 {
			return p, errors.New("keep_turns: must be 0 or more")
		}
		p.KeepTurns = *c.KeepTurns
	}
	if c.MaxBytes != "" {
		if p.MaxBytes, err = ParseBytes(c.MaxBytes); err != nil {
			return p, fmt.Errorf("max_bytes: %w", err)
		}
	}
	if c.Grace != "" {
		if p.Grace, err = ParseAge(c.Grace); err != nil {
			return p, fmt.Errorf("grace: %w", err)
		}
	}
	return p, nil
}

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

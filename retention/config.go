package retention

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckpt/ckpt/internal/units"
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
		if p.MaxAge, err = units.ParseAge(c.MaxAge); err != nil {
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
		if p.MaxBytes, err = units.ParseBytes(c.MaxBytes); err != nil {
			return p, fmt.Errorf("max_bytes: %w", err)
		}
	}
	if c.Grace != "" {
		if p.Grace, err = units.ParseAge(c.Grace); err != nil {
			return p, fmt.Errorf("grace: %w", err)
		}
	}
	return p, nil
}

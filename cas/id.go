package cas

import (
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/zeebo/blake3"
)

// ID names a blob: the BLAKE3-256 digest of its uncompressed bytes. IDs are
// comparable and usable as map keys. The zero value is not a valid ID: no
// store holds it, and ParseID, UnmarshalText, Scan, MarshalText and Value
// refuse it.
type ID [32]byte

// Sum returns the ID of b.
func Sum(b []byte) ID { return blake3.Sum256(b) }

// ParseID parses the 64 lowercase hex digits String returns. Anything else,
// including the zero ID, is an error.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 2*len(id) {
		return ID{}, fmt.Errorf("cas: parse id %q: want %d hex digits, got %d", s, 2*len(id), len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ID{}, fmt.Errorf("cas: parse id %q: %q at %d is not a lowercase hex digit", s, c, i)
		}
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return ID{}, fmt.Errorf("cas: parse id %q: %w", s, err)
	}
	if id.IsZero() {
		return ID{}, fmt.Errorf("cas: parse id %q: %w", s, errZeroID)
	}
	return id, nil
}

var errZeroID = errors.New("zero id")

// String returns id as 64 lowercase hex digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Short returns the first 12 hex digits of id, for messages meant for people.
func (id ID) Short() string { return id.String()[:12] }

// IsZero reports whether id is the zero value.
func (id ID) IsZero() bool { return id == ID{} }

// MarshalText encodes id as String does. It fails for the zero ID.
func (id ID) MarshalText() ([]byte, error) {
	if id.IsZero() {
		return nil, fmt.Errorf("cas: marshal id: %w", errZeroID)
	}
	return []byte(id.String()), nil
}

// UnmarshalText decodes text as ParseID does.
func (id *ID) UnmarshalText(text []byte) error {
	v, err := ParseID(string(text))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Value stores id in SQL as a 32-byte BLOB. It fails for the zero ID.
func (id ID) Value() (driver.Value, error) {
	if id.IsZero() {
		return nil, fmt.Errorf("cas: id value: %w", errZeroID)
	}
	return id[:], nil
}

// Scan reads an ID from a 32-byte SQL BLOB.
func (id *ID) Scan(src any) error {
	b, ok := src.([]byte)
	if !ok {
		return fmt.Errorf("cas: scan id: want []byte, got %T", src)
	}
	if len(b) != len(id) {
		return fmt.Errorf("cas: scan id: want %d bytes, got %d", len(id), len(b))
	}
	var v ID
	copy(v[:], b)
	if v.IsZero() {
		return fmt.Errorf("cas: scan id: %w", errZeroID)
	}
	*id = v
	return nil
}

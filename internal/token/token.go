// Package token is the rule for the bearer tokens ckpt's servers take:
// how strong one must be, and how a new one is made.
package token

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strings"
)

// MinBits is the least strength a token may have.
const MinBits = 128

// New returns a random token of MinBits bits, in hex.
func New() (string, error) {
	var b [MinBits / 8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Bits bounds a token's strength from above: its length times the
// bits per character of the smallest usual alphabet that holds it (digits,
// hex, base64, printable ASCII). A token of one repeated character is 0.
func Bits(t string) float64 {
	if t == "" || strings.Count(t, t[:1]) == len(t) {
		return 0
	}
	in := func(set string) bool {
		for _, r := range t {
			if !strings.ContainsRune(set, r) {
				return false
			}
		}
		return true
	}
	const digits = "0123456789"
	alpha := 95.0
	switch {
	case in(digits):
		alpha = 10
	case in(digits+"abcdef") || in(digits+"ABCDEF"):
		alpha = 16
	case in(digits + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/=-_"):
		alpha = 64
	}
	return float64(len(t)) * math.Log2(alpha)
}

// ReadFile reads a token from file, such as `ckpt serve --token-file`
// names: the file's text without surrounding space, printable ASCII, of
// at least MinBits bits.
func ReadFile(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	for _, r := range t {
		if r <= ' ' || r > '~' {
			return "", fmt.Errorf("token file %s: the token must be printable ASCII without spaces", file)
		}
	}
	if bits := Bits(t); bits < MinBits {
		return "", fmt.Errorf("token file %s: the token has at most %d bits, need %d (32 hex digits, or 22 base64 characters)", file, int(bits), MinBits)
	}
	return t, nil
}

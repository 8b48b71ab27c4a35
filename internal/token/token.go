// Package token is the rule for the bearer tokens ckpt's servers take:
// how strong one must be, and how a new one is made.
package token

import (
	"crypto/rand"
	"encoding/hex"
	"math"
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

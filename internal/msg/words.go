package msg

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Plural is n and the noun, with an s when n is not 1.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Shorten puts s on one line and cuts it to n runes, the last of them
// "…" when it was longer.
func Shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// AppendShort appends Shorten(s, n) to dst without allocating, for a
// caller that shortens once per line of a long listing. A test holds the
// two to the same bytes.
func AppendShort(dst []byte, s string, n int) []byte {
	start, runes := len(dst), 0
	space := false // a space is owed before the next word
	for i := 0; i < len(s); {
		c, size := rune(s[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(s[i:])
		}
		if unicode.IsSpace(c) {
			space = runes > 0
			i += size
			continue
		}
		if space {
			dst = append(dst, ' ')
			runes++
			space = false
		}
		dst = append(dst, s[i:i+size]...)
		runes++
		i += size
		if runes > n {
			return appendCut(dst[:start], dst[start:], n)
		}
	}
	return dst
}

// appendCut appends the first n-1 runes of b, each re-encoded (so an
// invalid byte becomes U+FFFD, as a conversion to []rune makes it), and
// "…". b may share dst's array beyond its length: it is read ahead of
// every write.
func appendCut(dst, b []byte, n int) []byte {
	var tmp [256]byte
	cut := tmp[:0]
	for k := 0; k < n-1; k++ {
		r, size := utf8.DecodeRune(b)
		cut = utf8.AppendRune(cut, r)
		b = b[size:]
	}
	dst = append(dst, cut...)
	return append(dst, "…"...)
}

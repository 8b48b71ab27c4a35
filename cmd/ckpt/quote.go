package main

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// qpath returns p as text output shows it: unchanged when it is printable
// UTF-8 without quotes or backslashes, else in double quotes with C-style
// escapes (\n, \t, \", \\, and \ooo octal for other control bytes and for
// bytes that are not UTF-8), as git quotes unusual names. A name that
// holds a newline can then never pass for two lines of output.
func qpath(p string) string {
	if !needsQuote(p) {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		c := p[i]
		switch {
		case r == utf8.RuneError && n <= 1:
			octal(&b, c)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\a':
			b.WriteString(`\a`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\v':
			b.WriteString(`\v`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			octal(&b, c)
		case !strconv.IsPrint(r):
			for j := range n {
				octal(&b, p[i+j])
			}
		default:
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

func octal(b *strings.Builder, c byte) {
	b.WriteByte('\\')
	b.WriteByte('0' + c>>6)
	b.WriteByte('0' + (c>>3)&7)
	b.WriteByte('0' + c&7)
}

func needsQuote(p string) bool {
	if !utf8.ValidString(p) {
		return true
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || !strconv.IsPrint(r) {
			return true
		}
	}
	return false
}

// pathBytes is the lossless JSON form of a path that is not valid UTF-8
// (JSON strings cannot carry such bytes: encoding/json would replace them
// with U+FFFD): the raw bytes, base64 in a "path_bytes" field beside the
// lossy "path". Empty, and so omitted, for every UTF-8 path.
func pathBytes(p string) []byte {
	if utf8.ValidString(p) {
		return nil
	}
	return []byte(p)
}

// pathBytesMap is the lossless companion of a JSON document whose paths sit
// in plain string lists: for each path that is not valid UTF-8, its lossy
// JSON string mapped to its exact bytes (base64). Nil, and so omitted,
// when every path is UTF-8.
func pathBytesMap(lists ...[]string) map[string][]byte {
	var m map[string][]byte
	for _, l := range lists {
		for _, p := range l {
			if b := pathBytes(p); b != nil {
				if m == nil {
					m = map[string][]byte{}
				}
				m[strings.ToValidUTF8(p, "\uFFFD")] = b
			}
		}
	}
	return m
}

// Package quote is the one rule by which ckpt shows a path to a person:
// the CLI's text output, the terminal picker, and the unified diffs the
// controller renders (and so the HTTP API and the web page, whose app.js
// applies the same rule to the paths it shows; a test in
// controller/httpapi holds the two to the same cases).
package quote

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Path returns p as ckpt shows it: unchanged when it is printable UTF-8
// without quotes or backslashes, else in double quotes with C-style escapes
// (\n, \t, \", \\, and \ooo octal for other control bytes, for bytes that
// are not UTF-8 and for each byte of a rune that does not print), as git
// quotes unusual names. A name that holds a newline can then never pass
// for two lines of output, nor one with an escape sequence move the
// cursor; strconv.Unquote gives the exact bytes back.
func Path(p string) string {
	if !needed(p) {
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

// List is the paths, each as Path shows it, joined by ", " (as an error
// message names them).
func List(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = Path(p)
	}
	return strings.Join(q, ", ")
}

func octal(b *strings.Builder, c byte) {
	b.WriteByte('\\')
	b.WriteByte('0' + c>>6)
	b.WriteByte('0' + (c>>3)&7)
	b.WriteByte('0' + c&7)
}

// needed reports whether Path quotes p.
func needed(p string) bool {
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

// Shell returns s as one word for a POSIX shell: unchanged when it holds
// nothing the shell would read specially, else in single quotes. It is how
// hook command lines name the ckpt executable and its arguments.
func Shell(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

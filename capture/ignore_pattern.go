package capture

import (
	"bytes"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// This file holds the pattern language of gitignore(5): parsing a rule file
// into rules, and matching one rule against a path relative to the
// directory of its file.
//
// A pattern compiles to a sequence of tokens; matching runs them as a
// nondeterministic automaton over the path's bytes, keeping the set of
// token positions reached. That is linear in the pattern times the path,
// so no pattern makes matching blow up.
//
// Slashes are never matched by '*', '?' or a bracket expression; "**" is
// described at compilePattern. Where gitignore(5) leaves a detail open
// (malformed brackets, "**" next to other characters, line endings), the
// behaviour is the one the differential test observes in git.

// rule is one line of a rule file.
type rule struct {
	source string // the rule file, relative to the workspace root, or builtinSource
	line   int    // 1-based line number in source
	text   string // the line as it counts: line ending, trailing spaces and a BOM removed

	negate   bool // "!pattern": re-includes
	dirOnly  bool // "pattern/": matches directories only
	anchored bool // a slash before the end: matched against the whole relative path
	pat      pattern
}

// excludes reports whether r ignores the path it decides; a nil rule
// (nothing matched) does not.
func (r *rule) excludes() bool { return r != nil && !r.negate }

// String names the rule as git check-ignore -v does: "source:line:pattern".
func (r *rule) String() string {
	if r == nil {
		return "no rule"
	}
	return r.source + ":" + strconv.Itoa(r.line) + ":" + r.text
}

// match reports whether r matches the path rel (relative to the rule
// file's directory; slash separated, canonical).
func (r *rule) match(rel string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	if !r.anchored {
		rel = rel[strings.LastIndexByte(rel, '/')+1:]
	}
	return r.pat.match(rel)
}

// ruleFile is the rules of one file, in order.
type ruleFile struct {
	rules []*rule
	// fileRules says some rule can match a file (is not "pattern/").
	fileRules bool
}

// match returns the last rule of f that matches rel, or nil.
func (f *ruleFile) match(rel string, isDir bool) *rule {
	for i := len(f.rules) - 1; i >= 0; i-- {
		if r := f.rules[i]; r.match(rel, isDir) {
			return r
		}
	}
	return nil
}

// parseRules parses the content of the rule file source.
func parseRules(data []byte, source string) *ruleFile {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	f := &ruleFile{}
	for n, line := range strings.Split(string(data), "\n") {
		if r := parseRule(line); r != nil {
			r.source, r.line = source, n+1
			f.rules = append(f.rules, r)
			f.fileRules = f.fileRules || !r.dirOnly
		}
	}
	return f
}

// parseRule parses one line (without its "\n"); nil for a blank line, a
// comment, or a line that can match nothing.
func parseRule(line string) *rule {
	line = strings.TrimSuffix(line, "\r")
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i] // git reads a line up to a NUL
	}
	if strings.HasPrefix(line, "#") {
		return nil
	}
	line = trimTrailingSpaces(line)
	if line == "" {
		return nil
	}
	r := &rule{text: line}
	p := line
	if strings.HasPrefix(p, "!") {
		r.negate = true
		p = p[1:]
	}
	if strings.HasSuffix(p, "/") {
		r.dirOnly = true
		p = p[:len(p)-1]
	}
	if strings.Contains(p, "/") {
		r.anchored = true
		p = strings.TrimPrefix(p, "/")
	}
	if p == "" {
		return nil
	}
	r.pat = compilePattern(p)
	return r
}

// trimTrailingSpaces removes the spaces that end line, except one quoted
// with a backslash.
func trimTrailingSpaces(line string) string {
	end := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
		case '\\':
			if i+1 < len(line) {
				i++
			}
			end = i + 1
		default:
			end = i + 1
		}
	}
	return line[:end]
}

// pattern is one compiled pattern.
type pattern struct {
	toks  []token
	never bool // malformed: matches nothing
	// literal is the whole pattern when it has no wildcard.
	literal    string
	isLiteral  bool
	starSuffix bool // the pattern is '*' then literal
	// What any match must have, checked before running the automaton: the
	// literal bytes it starts and ends with, its longest run of literal
	// bytes, and its least length.
	prefix, suffix, inner string
	minLen                int
}

// noteLiterals fills in p's prefix, suffix, inner and minLen.
func (p *pattern) noteLiterals() {
	var run []byte
	k := 0
	for k < len(p.toks) && p.toks[k].kind == tokByte {
		run = append(run, p.toks[k].b)
		k++
	}
	p.prefix = string(run)
	run = run[:0]
	for k = len(p.toks) - 1; k >= 0 && p.toks[k].kind == tokByte && (k < 2 || p.toks[k-2].kind != tokOpt); k-- {
		run = append(run, p.toks[k].b)
	}
	slices.Reverse(run)
	p.suffix = string(run)
	run = run[:0]
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t.kind == tokOpt:
			i += 2 // the "**/" may match nothing: its slash is not needed
			run = run[:0]
		case t.kind == tokByte:
			run = append(run, t.b)
			p.minLen++
			if len(run) > len(p.inner) {
				p.inner = string(run)
			}
		default:
			run = run[:0]
			if t.kind == tokAny || t.kind == tokClass {
				p.minLen++
			}
		}
	}
}

type tokenKind uint8

const (
	tokByte  tokenKind = iota // one given byte
	tokAny                    // '?': any byte but a slash
	tokClass                  // a bracket expression: a byte of the set, not a slash
	tokStar                   // '*': any run of bytes without a slash
	tokAll                    // a "**" that crosses slashes: any run of bytes
	tokOpt                    // before tokAll and a slash: lets the three match nothing
)

type token struct {
	kind tokenKind
	b    byte
	set  *byteSet
}

// byteSet is a set of byte values.
type byteSet [4]uint64

func (s *byteSet) add(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s[c>>6] |= 1 << (c & 63)
	}
}

func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

// compilePattern compiles p: the pattern of a line with its '!', its
// trailing slash and its leading slash removed.
//
// A run of two or more '*' matches across slashes when it stands at the
// start of p, just after a slash, or just after the literal text p starts
// with (up to the first '*', '?', '[' or '\\'), and is followed by a
// slash or ends p: before a slash it matches nothing or any string ending
// with a slash; at the end it matches anything. Any other run is one '*'.
func compilePattern(p string) pattern {
	var pat pattern
	prefix := strings.IndexAny(p, "*?[\\")
	if prefix < 0 {
		prefix = len(p)
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			deep := j-i > 1 && (i == prefix || p[i-1] == '/')
			switch {
			case deep && j == len(p):
				pat.toks = append(pat.toks, token{kind: tokAll})
			case deep && p[j] == '/':
				pat.toks = append(pat.toks, token{kind: tokOpt}, token{kind: tokAll}, token{kind: tokByte, b: '/'})
				j++
			default:
				pat.toks = append(pat.toks, token{kind: tokStar})
			}
			i = j
		case '?':
			pat.toks = append(pat.toks, token{kind: tokAny})
			i++
		case '[':
			set, next, ok := parseBracket(p, i)
			if !ok {
				return pattern{never: true}
			}
			pat.toks = append(pat.toks, token{kind: tokClass, set: set})
			i = next
		case '\\':
			if i+1 == len(p) {
				return pattern{never: true}
			}
			pat.toks = append(pat.toks, token{kind: tokByte, b: p[i+1]})
			i += 2
		default:
			pat.toks = append(pat.toks, token{kind: tokByte, b: c})
			i++
		}
	}
	pat.noteLiterals()
	lit := make([]byte, 0, len(pat.toks))
	for k, t := range pat.toks {
		if t.kind == tokByte {
			lit = append(lit, t.b)
		} else if k > 0 || t.kind != tokStar {
			return pat
		}
	}
	pat.literal = string(lit)
	pat.starSuffix = len(pat.toks) > 0 && pat.toks[0].kind == tokStar
	pat.isLiteral = !pat.starSuffix
	return pat
}

// parseBracket parses the bracket expression that opens at p[start]. It
// returns the set it matches, the index after its closing ']', and false
// when it is malformed (no closing ']', an unknown class name, or a
// dangling backslash).
func parseBracket(p string, start int) (set *byteSet, next int, ok bool) {
	set = new(byteSet)
	negate := false
	i := start + 1
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negate = true
		i++
	}
	for first := true; ; first = false {
		if i >= len(p) {
			return nil, 0, false
		}
		c := p[i]
		if c == ']' && !first {
			i++
			break
		}
		if c == '[' && i+1 < len(p) && p[i+1] == ':' {
			if end := strings.Index(p[i+2:], ":]"); end >= 0 {
				if !addClass(set, p[i+2:i+2+end]) {
					return nil, 0, false
				}
				i += 2 + end + 2
				continue
			}
		}
		lo, n, ok := bracketByte(p, i)
		if !ok {
			return nil, 0, false
		}
		i += n
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, n, ok := bracketByte(p, i+1)
			if !ok {
				return nil, 0, false
			}
			i += 1 + n
			if lo > hi {
				hi = lo // git: a reversed range matches its first byte only
			}
			set.add(lo, hi)
			continue
		}
		set.add(lo, lo)
	}
	if negate {
		for k := range set {
			set[k] = ^set[k]
		}
	}
	return set, i, true
}

// bracketByte reads one possibly escaped byte of a bracket expression at
// p[i], returning it and the bytes it took.
func bracketByte(p string, i int) (byte, int, bool) {
	if p[i] != '\\' {
		return p[i], 1, true
	}
	if i+1 >= len(p) {
		return 0, 0, false
	}
	return p[i+1], 2, true
}

// classes are the character classes of bracket expressions ("alpha" for
// "[:alpha:]"), over ASCII.
var classes = map[string]func(b byte) bool{
	"alnum": func(b byte) bool { return isAlpha(b) || isDigit(b) },
	"alpha": isAlpha,
	"blank": func(b byte) bool { return b == ' ' || b == '\t' },
	"cntrl": func(b byte) bool { return b < 0x20 || b == 0x7f },
	"digit": isDigit,
	"graph": func(b byte) bool { return b > 0x20 && b < 0x7f },
	"lower": func(b byte) bool { return 'a' <= b && b <= 'z' },
	"print": func(b byte) bool { return b >= 0x20 && b < 0x7f },
	"punct": func(b byte) bool { return b > 0x20 && b < 0x7f && !isAlpha(b) && !isDigit(b) },
	// Not '\v' or '\f': git leaves them out.
	"space":  func(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' },
	"upper":  func(b byte) bool { return 'A' <= b && b <= 'Z' },
	"xdigit": func(b byte) bool { return isDigit(b) || ('a' <= b && b <= 'f') || ('A' <= b && b <= 'F') },
}

// addClass adds the character class name ("alpha" for "[:alpha:]") to set,
// over ASCII, and reports whether the name is known.
func addClass(set *byteSet, name string) bool {
	in, ok := classes[name]
	if !ok {
		return false
	}
	for c := 0; c < 128; c++ {
		if b := byte(c); in(b) {
			set.add(b, b)
		}
	}
	return true
}

func isAlpha(b byte) bool { return ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') }
func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// match reports whether p matches all of s.
func (p *pattern) match(s string) bool {
	switch {
	case p.never:
		return false
	case p.isLiteral:
		return s == p.literal
	case p.starSuffix:
		return strings.HasSuffix(s, p.literal) && strings.IndexByte(s[:len(s)-len(p.literal)], '/') < 0
	}
	if len(s) < p.minLen || !strings.HasPrefix(s, p.prefix) || !strings.HasSuffix(s, p.suffix) || !strings.Contains(s, p.inner) {
		return false
	}
	// The automaton's states are token positions: state i means the
	// tokens before i have matched the bytes read so far; len(p.toks)
	// means all have.
	n := len(p.toks) + 1
	words := (n + 63) / 64
	var bufA, bufB [4]uint64
	var cur, next []uint64
	if words <= len(bufA) {
		cur, next = bufA[:words], bufB[:words]
	} else {
		cur, next = make([]uint64, words), make([]uint64, words)
	}
	cur[0] = 1
	p.close(cur)
	for k := 0; k < len(s); k++ {
		c := s[k]
		clear(next)
		alive := false
		for w, word := range cur {
			for word != 0 {
				low := word & -word
				word ^= low
				i := w*64 + bits.TrailingZeros64(low)
				if i == len(p.toks) {
					continue
				}
				if to := p.toks[i].next(c, i); to >= 0 {
					next[to>>6] |= 1 << (to & 63)
					alive = true
				}
			}
		}
		if !alive {
			return false
		}
		p.close(next)
		cur, next = next, cur
	}
	end := len(p.toks)
	return cur[end>>6]&(1<<(end&63)) != 0
}

// next returns the state after reading c in state i, whose token is t,
// or -1 when t does not take c.
func (t *token) next(c byte, i int) int {
	switch t.kind {
	case tokByte:
		if c == t.b {
			return i + 1
		}
	case tokAny:
		if c != '/' {
			return i + 1
		}
	case tokClass:
		if c != '/' && t.set.has(c) {
			return i + 1
		}
	case tokStar:
		if c != '/' {
			return i
		}
	case tokAll:
		return i
	}
	return -1
}

// close adds to set the states reachable without reading a byte: past a
// '*' or "**" that matches nothing, and past a "**/" altogether.
func (p *pattern) close(set []uint64) {
	for i, t := range p.toks {
		if set[i>>6]&(1<<(i&63)) == 0 {
			continue
		}
		switch t.kind {
		case tokStar, tokAll:
			set[(i+1)>>6] |= 1 << ((i + 1) & 63)
		case tokOpt:
			set[(i+1)>>6] |= 1 << ((i + 1) & 63)
			set[(i+3)>>6] |= 1 << ((i + 3) & 63)
		}
	}
}

// Package quotetest holds the names every front-end that shows paths must
// show alike (quote.Path in Go, quotePath in the web page's app.js).
package quotetest

// Case is a name and how it is shown.
type Case struct{ In, Want string }

// Cases are names that must be quoted, and some that must not. Only the
// valid UTF-8 ones reach the web page as they are (a JSON string cannot
// carry other bytes).
var Cases = []Case{
	{"a/b.txt", "a/b.txt"},
	{"héllo/ünï.txt", "héllo/ünï.txt"},
	{"with space.txt", "with space.txt"},
	{"new\nline.txt", `"new\nline.txt"`},
	{"tab\there", `"tab\there"`},
	{"cr\rx", `"cr\rx"`},
	{`q"uote`, `"q\"uote"`},
	{`back\slash`, `"back\\slash"`},
	{"bad\xffutf8", `"bad\377utf8"`},
	{"bell\x07", `"bell\a"`},
	{"bs\b ff\f vt\v", `"bs\b ff\f vt\v"`},
	{"esc\x1b[31m", `"esc\033[31m"`},
	{"del\x7f", `"del\177"`},
	{"nul\x00", `"nul\000"`},
	{"c1\u0085", `"c1\302\205"`},
	{"zwsp\u200b", `"zwsp\342\200\213"`},
	{"ls\u2028", `"ls\342\200\250"`},
	{"nbsp\u00a0", `"nbsp\302\240"`},
	{"emoji 😀.txt", "emoji 😀.txt"},
}

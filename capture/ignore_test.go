package capture

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// ignoreCase is one layout for the differential test: rule files, symlinks
// and the paths to create (a trailing "/" makes a directory). Every file
// and directory in the resulting tree is then matched by git and by Ignore.
type ignoreCase struct {
	name  string
	rules map[string]string // rule file path → content
	links map[string]string // symlink path → target
	paths []string
}

// gitCorpus covers gitignore(5) piece by piece. Only its last layout uses
// what git does not know (DefaultIgnoredDirs, version-control names); those
// differences are listed in knownGitDiffs.
var gitCorpus = []ignoreCase{
	{name: "basename", rules: map[string]string{".gitignore": "*.log\nfoo\n"},
		paths: []string{"a.log", "a.logx", "dir/b.log", "dir/sub/c.log", "foo", "food", "dir/foo/", "dir/foo/x"}},
	{name: "negation", rules: map[string]string{".gitignore": "*.log\n!keep.log\n"},
		paths: []string{"a.log", "keep.log", "sub/keep.log", "sub/x.log"}},
	{name: "last match wins", rules: map[string]string{".gitignore": "!keep.log\n*.log\n"},
		paths: []string{"keep.log", "a.log"}},
	{name: "dir only", rules: map[string]string{".gitignore": "out/\n"},
		paths: []string{"out/a", "sub/out/b", "other/out", "outx/c"}},
	{name: "dir only star and negation", rules: map[string]string{".gitignore": "tmp*/\n!tmpkeep/\n"},
		paths: []string{"tmpa/f", "tmpkeep/f", "tmpfile", "sub/tmpb/g"}},
	{name: "negated dir only is not a file", rules: map[string]string{".gitignore": "*.o\n!lib.o/\n"},
		paths: []string{"lib.o", "x.o", "sub/lib.o/f"}},
	{name: "anchored leading slash", rules: map[string]string{".gitignore": "/root.txt\n/out2/\n"},
		paths: []string{"root.txt", "sub/root.txt", "out2/x", "sub/out2/x"}},
	{name: "anchored middle slash", rules: map[string]string{".gitignore": "doc/frotz\na/b/\n"},
		paths: []string{"doc/frotz", "x/doc/frotz", "a/b/c", "x/a/b/c"}},
	{name: "middle slash dir only on a file", rules: map[string]string{".gitignore": "doc/frotz/\n"},
		paths: []string{"doc/frotz", "doc/frotzy"}},
	{name: "star does not cross slash", rules: map[string]string{".gitignore": "doc/*.html\n*/*.txt\n"},
		paths: []string{"doc/a.html", "doc/ppc/b.html", "tools/doc/c.html", "a/b.txt", "a/b/c.txt", "b.txt"}},
	{name: "leading double star", rules: map[string]string{".gitignore": "**/foo\n**/bar/baz\n/**/qux\n"},
		paths: []string{"foo", "a/foo", "a/b/foo/x", "bar/baz", "x/bar/baz", "x/bar/q/baz", "qux", "a/b/qux"}},
	{name: "trailing double star", rules: map[string]string{".gitignore": "abc/**\n"},
		paths: []string{"abc/x", "abc/d/e", "xabc/f", "q/abc/x", "abc2"}},
	{name: "middle double star", rules: map[string]string{".gitignore": "a/**/b\nm/**/n/\n"},
		paths: []string{"a/b", "a/x/b", "a/x/y/b", "a/x/y/bb", "c/a/b", "m/n/f", "m/o/p/n/f", "m/n2"}},
	{name: "trailing double star then negation", rules: map[string]string{".gitignore": "dir/**\n!dir/keep\n!dir/sub/\n"},
		paths: []string{"dir/keep", "dir/other", "dir/sub/f", "dir/sub2/f"}},
	{name: "double star alone", rules: map[string]string{".gitignore": "**\n!*.keep\n"},
		paths: []string{"a", "b/c", "d.keep"}},
	{name: "question mark", rules: map[string]string{".gitignore": "?.txt\nfile?/\nd/?x\n"},
		paths: []string{"a.txt", "ab.txt", ".txt", "file1/z", "file12/z", "file3", "d/ax", "d/abx", "d/x"}},
	{name: "double star after other characters", rules: map[string]string{".gitignore": "k**/m\n[p]**/m\n\\q**/m\n?r**/m\n*/**/n\n"},
		paths: []string{"km", "k/m", "kx/m", "kx/y/m", "pm", "p/m", "px/m", "px/y/m", "qm", "q/m", "qx/y/m", "srm", "sr/m", "sx/y/m", "e/n", "e/f/g/n"}},
	{name: "double star at the end after other characters", rules: map[string]string{".gitignore": "/u/v**\n!/u/vw/\n/[t]s**\n!/ts2/\n/w**\n!/wz/\n"},
		paths: []string{"u/vw/a", "u/vw/b/c", "u/vx", "ts2/a", "ts2/b/c", "wz/a", "wz/b/c"}},
	{name: "double star before other characters", rules: map[string]string{".gitignore": "/**h\nj/**i\n"},
		paths: []string{"h", "gh", "g/h", "j/i", "j/xi", "j/x/i", "j/x/yi"}},
	{name: "three stars", rules: map[string]string{".gitignore": "c***/d\ne/***/f\n"},
		paths: []string{"cd", "c/d", "cx/y/d", "e/f", "e/x/f", "e/x/y/f", "e/xf"}},
	{name: "escapes", rules: map[string]string{".gitignore": "\\#x\n\\!y\nz\\?\nq\\*\n\\[k]\n\\\\\nt\\\nn\\o\n"},
		paths: []string{"#x", "!y", "z?", "za", "q*", "qq", "[k]", "k", "\\", "t\\", "t", "no", "n\\o"}},
	{name: "bracket details", rules: map[string]string{".gitignore": "[]y]1\n[!]y]2\n[y-]3\n[\\]]4\n[\\-y]5\n[y-y]6\n[y-w]7\n[w-y-z]8\n[[:lower:][:digit:]]9\n[[:lower]0\n[[:nope:]]x\n[y\n"},
		paths: []string{"]1", "y1", "w1", "]2", "y2", "w2", "y3", "-3", "w3", "]4", "\\4", "-5", "y5", "\\5", "y6", "y7", "w7", "x7", "w8", "x8", "-8", "z8", "a9", "9", "A9", "l0", ":0", "[0", "]0", "ex", "[y", "y"}},
	// Kept small: git's own matching slows down fast as stars are added
	// (TestIgnorePathologicalPatternIsFast covers ours at full size).
	{name: "hostile stars", rules: map[string]string{".gitignore": strings.Repeat("*q", 7) + "r\n" + strings.Repeat("**/", 12) + "s\n" + strings.Repeat("p/**/", 6) + "t\n"},
		paths: []string{strings.Repeat("q", 30) + "x", strings.Repeat("q", 8) + "r", strings.Repeat("s/", 14) + "u", strings.Repeat("p/", 8) + "t", strings.Repeat("p/", 5) + "tt"}},
	{name: "slash escaped or in brackets", rules: map[string]string{".gitignore": "a\\/b\nc[/]d\ne[!x]f\n\\/g\nh\\\\/i\n"},
		paths: []string{"a/b", "c/d", "cd", "e/f", "ex/", "g", "h/i", "h\\/i", "j/g"}},
	{name: "comments and blank lines", rules: map[string]string{".gitignore": "# comment\n\n   \n\t\n #not-a-comment\nreal\n"},
		paths: []string{"# comment", "comment", " #not-a-comment", "real", "\t"}},
	{name: "trailing spaces", rules: map[string]string{".gitignore": "sp1   \nsp2\\ \nsp3\\  \nsp4\\\\ \n"},
		paths: []string{"sp1", "sp1 ", "sp2", "sp2 ", "sp3", "sp3 ", "sp3  ", "sp4\\", "sp4\\ "}},
	{name: "leading spaces and tabs kept", rules: map[string]string{".gitignore": "  lead\ntab\t\n"},
		paths: []string{"  lead", "lead", "tab\t", "tab"}},
	{name: "crlf", rules: map[string]string{".gitignore": "crlf\r\nother \r\nkeep\r\r\n"},
		paths: []string{"crlf", "crlf\r", "other", "keep", "keep\r"}},
	{name: "nul in a line", rules: map[string]string{".gitignore": "ab\r\x00cd\nef \x00x\ngh\x00\r\n\x00ij\n!\x00\nkl\\\x00 \nmn\r"},
		paths: []string{"ab", "ab\r", "ef", "ef ", "gh", "ij", "kl", "kl\\", "kl ", "mn"}},
	{name: "bom and no final newline", rules: map[string]string{".gitignore": "\xef\xbb\xbfbom\nlast"},
		paths: []string{"bom", "last", "lastx"}},
	{name: "degenerate lines", rules: map[string]string{".gitignore": "/\n!\n//\n!/\nback\\\n"},
		paths: []string{"a", "b/c", "back\\", "back"}},
	{name: "utf-8 is bytes", rules: map[string]string{".gitignore": "é\n?ñ\n??ü\n[é]x\n"},
		paths: []string{"é", "añ", "éñ", "éü", "aü", "éx"}},
	{name: "dir only with star", rules: map[string]string{".gitignore": "*.d/\n"},
		paths: []string{"x.d/f", "y.d", "sub/z.d/g"}},
	{name: "hidden files", rules: map[string]string{".gitignore": ".*\n!.gitignore\n"},
		paths: []string{".env", ".config/x", "visible"}},
	{name: "spaces inside names", rules: map[string]string{".gitignore": "my file.txt\nsome dir/\n"},
		paths: []string{"my file.txt", "myfile.txt", "some dir/x"}},
	{name: "nested overrides outer", rules: map[string]string{".gitignore": "*.tmp\n", "sub/.gitignore": "!keep.tmp\n"},
		paths: []string{"keep.tmp", "a.tmp", "sub/keep.tmp", "sub/a.tmp", "sub/deeper/keep.tmp"}},
	{name: "nested re-ignores", rules: map[string]string{".gitignore": "*.md\n!README.md\n", "sub/.gitignore": "README.md\n"},
		paths: []string{"README.md", "x.md", "sub/README.md", "sub/deep/README.md", "other/README.md"}},
	{name: "nested anchored is relative", rules: map[string]string{"sub/.gitignore": "/only-here\nmid/file\n*/*.c\n"},
		paths: []string{"only-here", "sub/only-here", "sub/x/only-here", "mid/file", "sub/mid/file", "sub/x/mid/file", "sub/a/b.c", "sub/a/b/c.c", "a/b.c"}},
	{name: "nested double star", rules: map[string]string{"sub/.gitignore": "**/gen\nq/**\n"},
		paths: []string{"gen", "sub/gen", "sub/a/b/gen", "sub/q/x", "q/x"}},
	{name: "three levels", rules: map[string]string{".gitignore": "*.a\n", "x/.gitignore": "!*.a\n*.b\n", "x/y/.gitignore": "!*.b\n*.a\n"},
		paths: []string{"1.a", "1.b", "x/2.a", "x/2.b", "x/y/3.a", "x/y/3.b", "x/z/4.a"}},
	{name: "file in ignored dir stays ignored", rules: map[string]string{".gitignore": "logs/\n!logs/keep\n"},
		paths: []string{"logs/keep", "logs/other"}},
	{name: "ignored dir's own gitignore is not read", rules: map[string]string{".gitignore": "skip/\n", "skip/.gitignore": "!*\n"},
		paths: []string{"skip/a", "skip/sub/b"}},
	{name: "re-include via dir star", rules: map[string]string{".gitignore": "logs/*\n!logs/keep\n"},
		paths: []string{"logs/keep", "logs/other", "logs/sub/keep"}},
	{name: "whitelist idiom", rules: map[string]string{".gitignore": "*\n!*/\n!*.go\n"},
		paths: []string{"a.go", "a.txt", "sub/b.go", "sub/c.md"}},
	{name: "ignore all dirs but one", rules: map[string]string{".gitignore": "*/\n!keep/\n"},
		paths: []string{"keep/f", "other/f", "f"}},
	{name: "outer dir rule blocks nested negation", rules: map[string]string{".gitignore": "/a/b/\n", "a/.gitignore": "!b/\n"},
		paths: []string{"a/b/f", "a/c/f"}},
	{name: "nested negation of outer dir rule", rules: map[string]string{".gitignore": "b/\n", "a/.gitignore": "!b/\n"},
		paths: []string{"a/b/f", "b/f", "c/b/f"}},
	{name: "symlinked gitignore is not followed", rules: map[string]string{"rules": "*\n!rules\n!sub/\n!.gitignore\n"},
		links: map[string]string{"sub/.gitignore": "../rules"},
		paths: []string{"sub/x", "sub/y/z"}},
	{name: "ckpt additions", rules: map[string]string{".gitignore": "!build/\n"},
		paths: []string{"build/x", "a/node_modules/y", ".hg", "sub/.svn/z", "builds/x"}},
}

// knownGitDiffs are deliberate differences from git, keyed by
// "layout name: path", each with its reason. Keep in step with docs/scan.md.
var knownGitDiffs = map[string]string{
	"ckpt additions: build":            "a built-in default directory; only .ckptignore can bring it back, not a .gitignore negation",
	"ckpt additions: build/x":          "inside a built-in default directory",
	"ckpt additions: a/node_modules":   "a built-in default directory, at any depth",
	"ckpt additions: a/node_modules/y": "inside a built-in default directory",
	"ckpt additions: .hg":              "version-control names are always ignored, file or directory",
	"ckpt additions: sub/.svn":         "version-control names are always ignored, at any depth",
	"ckpt additions: sub/.svn/z":       "inside a version-control directory",
}

// gitEnv is an environment for git with no user or system configuration
// and no GIT_* variables from the caller.
func gitEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
}

// newGitRepo makes dir a git repository with no excludes of its own.
func newGitRepo(t testing.TB, dir string) []string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the differential test needs the real git check-ignore (CI installs it)")
	}
	env := gitEnv(t.TempDir())
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return env
}

// gitVerdict is git's answer for one path.
type gitVerdict struct {
	ignored bool
	rule    string // the deciding "source:line:pattern", or ""
}

// gitCheckIgnore returns git's verdict for each path.
func gitCheckIgnore(t testing.TB, dir string, env, paths []string) map[string]gitVerdict {
	t.Helper()
	cmd := exec.Command("git", "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	cmd.Dir = dir
	cmd.Env = env
	// "./" keeps a leading ':' from reading as pathspec magic.
	var in strings.Builder
	for _, p := range paths {
		in.WriteString("./" + p + "\x00")
	}
	cmd.Stdin = strings.NewReader(in.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("git check-ignore: %v\n%s", err, stderr.Bytes())
	}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields)%4 != 0 {
		t.Fatalf("git check-ignore: %d fields, not a multiple of 4: %q", len(fields), out)
	}
	got := make(map[string]gitVerdict, len(paths))
	for i := 0; i < len(fields); i += 4 {
		src, line, pat, p := fields[i], fields[i+1], fields[i+2], strings.TrimPrefix(fields[i+3], "./")
		if pat == "" {
			got[p] = gitVerdict{}
			continue
		}
		got[p] = gitVerdict{ignored: pat[0] != '!', rule: src + ":" + line + ":" + pat}
	}
	if len(got) != len(paths) {
		t.Fatalf("git check-ignore answered for %d paths, asked %d", len(got), len(paths))
	}
	return got
}

// buildIgnoreLayout creates c's layout under dir.
func buildIgnoreLayout(t testing.TB, dir string, c ignoreCase) {
	t.Helper()
	write := func(rel string, data []byte) {
		abs := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range c.rules {
		write(rel, []byte(content))
	}
	for rel, target := range c.links {
		abs := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, abs); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range c.paths {
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		write(p, []byte("x"))
	}
}

// ignoreTreePaths lists every file, symlink and directory under dir except the
// top .git, with whether it is a directory.
func ignoreTreePaths(t testing.TB, dir string) map[string]bool {
	t.Helper()
	paths := make(map[string]bool)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" {
			return filepath.SkipDir
		}
		paths[rel] = d.IsDir()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// compareWithGit matches every path of the tree at dir with git and with
// a fresh Ignore, and returns the "label: path" keys compared.
func compareWithGit(t *testing.T, dir string, env []string, label string) []string {
	t.Helper()
	tree := ignoreTreePaths(t, dir)
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	want := gitCheckIgnore(t, dir, env, paths)
	m := NewIgnore(dir)
	keys := make([]string, 0, len(paths))
	for _, p := range paths {
		keys = append(keys, label+": "+p)
		r, err := m.decide(p, tree[p])
		if err != nil {
			t.Errorf("%s: Match(%q): %v", label, p, err)
			continue
		}
		got := ""
		if r != nil {
			got = r.String()
		}
		w := want[p]
		key := label + ": " + p
		reason, known := knownGitDiffs[key]
		if r.excludes() == w.ignored && got == w.rule {
			if known {
				t.Errorf("%s: listed as a known difference (%s) but agrees with git: drop it from knownGitDiffs", key, reason)
			}
			continue
		}
		if known {
			t.Logf("known difference %s (%s)", key, reason)
			continue
		}
		t.Errorf("%s: %q (dir %v): got ignored=%v by %q, git says ignored=%v by %q", label, p, tree[p], r.excludes(), got, w.ignored, w.rule)
	}
	return keys
}

// generatedCorpus returns layouts made by code: every character class
// against every ASCII byte, and random bracket expressions against the
// bytes they are made of. Each rule starts with its own tag, so one rule
// file holds many rules that cannot match each other's paths.
func generatedCorpus() []ignoreCase {
	classes := []string{"alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "xdigit"}
	cls := ignoreCase{name: "generated classes", rules: map[string]string{}}
	var rules strings.Builder
	for i, c := range classes {
		for neg, bang := range []string{"", "!"} {
			tag := fmt.Sprintf("c%d%d", i, neg)
			fmt.Fprintf(&rules, "%s[%s[:%s:]]\n", tag, bang, c)
			for b := 1; b < 0x80; b++ {
				if b != '/' {
					cls.paths = append(cls.paths, tag+string(rune(b)))
				}
			}
			cls.paths = append(cls.paths, tag+"é")
		}
	}
	cls.rules[".gitignore"] = rules.String()

	rng := rand.New(rand.NewPCG(3, 4))
	atoms := []string{"a", "b", "e", "-", "]", "!", "^", "[", ":", "\\]", "\\-", "\\\\", "\\e", "a-e", "e-a", "b-b", "--a", "[:alpha:]", "[:punct:]", "[:nope:]", "[:alpha", "*", "?"}
	subjects := "abcef-]!^[:\\*?Z"
	br := ignoreCase{name: "generated brackets", rules: map[string]string{}}
	rules.Reset()
	for i := range 80 {
		tag := fmt.Sprintf("b%d", i)
		var p strings.Builder
		p.WriteString(tag + "[")
		if rng.IntN(3) == 0 {
			p.WriteString([]string{"!", "^"}[rng.IntN(2)])
		}
		for n := 1 + rng.IntN(3); n > 0; n-- {
			p.WriteString(atoms[rng.IntN(len(atoms))])
		}
		if rng.IntN(8) != 0 {
			p.WriteString("]")
		}
		rules.WriteString(p.String() + "\n")
		for _, c := range subjects {
			br.paths = append(br.paths, tag+string(c))
		}
	}
	br.rules[".gitignore"] = rules.String()
	return []ignoreCase{cls, br}
}

// TestIgnoreMatchesGit compares Ignore with `git check-ignore --no-index`
// on every path of every layout in gitCorpus.
func TestIgnoreMatchesGit(t *testing.T) {
	t.Parallel()
	total := 0
	seen := make(map[string]bool)
	for _, c := range append(slices.Clone(gitCorpus), generatedCorpus()...) {
		dir := t.TempDir()
		env := newGitRepo(t, dir)
		buildIgnoreLayout(t, dir, c)
		for _, k := range compareWithGit(t, dir, env, c.name) {
			seen[k] = true
			total++
		}
	}
	for k := range knownGitDiffs {
		if !seen[k] {
			t.Errorf("knownGitDiffs lists %q, which the corpus does not have", k)
		}
	}
	t.Logf("%d layouts, %d paths compared with git", len(gitCorpus), total)
	if total < 50 {
		t.Errorf("only %d paths compared, want at least 50", total)
	}
}

var (
	ignoreRounds = flag.Int("ignore.rounds", 300, "random rule sets TestIgnoreMatchesGitRandom compares with git")
	ignoreSeed   = flag.Uint64("ignore.seed", 1, "seed of TestIgnoreMatchesGitRandom")
)

// TestIgnoreMatchesGitRandom compares Ignore with git on random rule files
// over a fixed tree; the seed is fixed so a failure reproduces.
func TestIgnoreMatchesGitRandom(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	env := newGitRepo(t, dir)
	dirs := []string{"a", "ab", "ab/b", "b", "b/ab", "b/ab/a"}
	paths := []string{"a/a", "a/ab", "a/b", "ab/b/a", "ab/b/ab", "b/ab/a/a", "b/ab/a/ab", "b/ab/a/b"}
	for _, d := range append([]string{""}, dirs...) {
		for _, f := range []string{"a.b", "a b", "[a]", "a*", "?", "ba", "aa", "x", "-", "]b", "a\\"} {
			paths = append(paths, path.Join(d, f))
		}
	}
	for _, p := range paths {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tokens := []string{"a", "b", "a", "b", ".", " ", "-", "*", "*", "**", "***", "?", "/", "/", "/", "[ab]", "[!a]", "[a-b]", "[b-a]", "[]a]", "[^-]",
		"\\*", "\\a", "\\ ", "\\", "[", "]", "[[:alpha:]]", "[[:space:]]"}
	rng := rand.New(rand.NewPCG(*ignoreSeed, 2))
	pattern := func() string {
		var s strings.Builder
		if rng.IntN(5) == 0 {
			s.WriteString("!")
		}
		if rng.IntN(4) == 0 {
			s.WriteString("/")
		}
		for n := 1 + rng.IntN(5); n > 0; n-- {
			s.WriteString(tokens[rng.IntN(len(tokens))])
		}
		if rng.IntN(4) == 0 {
			s.WriteString("/")
		}
		return s.String()
	}
	rules := func() string {
		var lines []string
		for n := 1 + rng.IntN(4); n > 0; n-- {
			lines = append(lines, pattern())
		}
		return strings.Join(lines, "\n") + "\n"
	}
	rounds := *ignoreRounds
	total := 0
	for i := range rounds {
		for _, f := range []string{".gitignore", "a/.gitignore", "ab/b/.gitignore"} {
			content := ""
			if f == ".gitignore" || rng.IntN(3) == 0 {
				content = rules()
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		total += len(compareWithGit(t, dir, env, fmt.Sprintf("round %d", i)))
		if t.Failed() {
			for _, f := range []string{".gitignore", "a/.gitignore", "ab/b/.gitignore"} {
				data, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s:\n%s", f, data)
			}
			return
		}
	}
	t.Logf("%d random rule sets, %d paths compared with git", rounds, total)
}

// writeIgnoreTree writes files (content by path; a trailing "/" makes an empty
// directory) under a new temporary root and returns it.
func writeIgnoreTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		abs := filepath.Join(root, filepath.FromSlash(rel))
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(abs, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

type ignoreMatchCase struct {
	path  string
	isDir bool
	want  bool
}

func checkIgnoreMatches(t *testing.T, m *Ignore, cases []ignoreMatchCase) {
	t.Helper()
	for _, c := range cases {
		r, err := m.decide(c.path, c.isDir)
		if err != nil {
			t.Errorf("Match(%q, %v): %v", c.path, c.isDir, err)
			continue
		}
		if got := r.excludes(); got != c.want {
			t.Errorf("Match(%q, %v) = %v (by %s), want %v", c.path, c.isDir, got, r, c.want)
		}
	}
}

func TestIgnoreCkptignore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		cases []ignoreMatchCase
	}{
		{"overrides a gitignore negation",
			map[string]string{".gitignore": "*.log\n!keep.log\n", ".ckptignore": "keep.log\n"},
			[]ignoreMatchCase{{"keep.log", false, true}, {"sub/keep.log", false, true}, {"a.log", false, true}}},
		{"overrides a nested gitignore",
			map[string]string{"sub/.gitignore": "!*.bin\n", ".ckptignore": "*.bin\n"},
			[]ignoreMatchCase{{"sub/x.bin", false, true}, {"sub/deep/y.bin", false, true}}},
		{"re-includes what gitignore ignores",
			map[string]string{".gitignore": "*.bin\n", "sub/.gitignore": "*.dat\n", ".ckptignore": "!tool.bin\n!sub/keep.dat\n"},
			[]ignoreMatchCase{{"tool.bin", false, false}, {"x.bin", false, true}, {"sub/keep.dat", false, false}, {"sub/other.dat", false, true}}},
		{"is anchored at the root",
			map[string]string{".ckptignore": "/top.txt\nsub/only\n"},
			[]ignoreMatchCase{{"top.txt", false, true}, {"sub/top.txt", false, false}, {"sub/only", false, true}, {"x/sub/only", false, false}}},
		{"cannot re-include inside an ignored directory",
			map[string]string{".gitignore": "gen/\n", ".ckptignore": "!gen/keep.go\n"},
			[]ignoreMatchCase{{"gen", true, true}, {"gen/keep.go", false, true}}},
		{"can re-include the directory itself",
			map[string]string{".gitignore": "gen/\n", ".ckptignore": "!gen/\n"},
			[]ignoreMatchCase{{"gen", true, false}, {"gen/keep.go", false, false}}},
		{"brings back a default directory",
			map[string]string{".ckptignore": "!dist/\n!/build/\n"},
			[]ignoreMatchCase{{"dist", true, false}, {"dist/x.js", false, false}, {"a/dist", true, false}, {"build", true, false}, {"a/build", true, true}, {"node_modules", true, true}}},
		{"a gitignore cannot bring back a default directory",
			map[string]string{".gitignore": "!build/\n!node_modules\n"},
			[]ignoreMatchCase{{"build", true, true}, {"node_modules", true, true}, {"node_modules/x/index.js", false, true}}},
		{"cannot bring back a version-control directory",
			map[string]string{".ckptignore": "!.git/\n!.hg\n!.git/config\n"},
			[]ignoreMatchCase{{".git", true, true}, {".hg", true, true}, {".git/config", false, true}}},
		{"a file rule below directory-only rules",
			map[string]string{".gitignore": "gen/\n", "a/.gitignore": "*.log\n", "b/.gitignore": "logs/\n"},
			[]ignoreMatchCase{{"a/x.log", false, true}, {"a/c/x.log", false, true}, {"x.log", false, false}, {"b/x.log", false, false},
				{"gen", false, false}, {"gen", true, true}, {"b/logs", false, false}, {"b/logs", true, true}}},
		{"only the root one is read",
			map[string]string{"sub/.ckptignore": "x\n"},
			[]ignoreMatchCase{{"sub/x", false, false}, {"x", false, false}}},
		{"same syntax as gitignore",
			map[string]string{".ckptignore": "# comment\r\n*.tmp\r\n!a.tmp \r\nsp\\ \n[0-9]*.out/\n**/cache2/**\n"},
			[]ignoreMatchCase{{"b.tmp", false, true}, {"a.tmp", false, false}, {"# comment", false, false}, {"sp ", false, true}, {"sp", false, false},
				{"9x.out", true, true}, {"9x.out", false, false}, {"x.out", true, false}, {"a/cache2/f", false, true}, {"a/cache2", true, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkIgnoreMatches(t, NewIgnore(writeIgnoreTree(t, tt.files)), tt.cases)
		})
	}
}

func TestIgnoreDefaults(t *testing.T) {
	t.Parallel()
	var cases []ignoreMatchCase
	for _, name := range DefaultIgnoredDirs() {
		cases = append(cases,
			ignoreMatchCase{name, true, true},
			ignoreMatchCase{"a/b/" + name, true, true},
			ignoreMatchCase{name + "/x.txt", false, true},
			ignoreMatchCase{"a/" + name + "/deep/x.txt", false, true},
			ignoreMatchCase{name, false, false}, // a file of that name is kept
			ignoreMatchCase{"a/" + name, false, false},
			ignoreMatchCase{name + "x", true, false},
			ignoreMatchCase{"x" + name, true, false},
		)
	}
	for _, name := range vcsNames {
		cases = append(cases,
			ignoreMatchCase{name, true, true},
			ignoreMatchCase{name, false, true}, // a .git file (a worktree's link) too
			ignoreMatchCase{"sub/" + name, true, true},
			ignoreMatchCase{name + "/config", false, true},
			ignoreMatchCase{"a/" + name + "/objects/ab/cd", false, true},
		)
	}
	// Any letter case of a version-control name: a case-insensitive file
	// system opens the same directory.
	for _, name := range []string{".GIT", ".Git", ".gIt", ".HG", ".Svn", ".JJ", ".bZR"} {
		cases = append(cases,
			ignoreMatchCase{name, true, true},
			ignoreMatchCase{name, false, true},
			ignoreMatchCase{"a/" + name + "/config", false, true},
		)
	}
	cases = append(cases,
		ignoreMatchCase{".GITIGNORE", false, false},
		ignoreMatchCase{".gitx", true, false},
		ignoreMatchCase{"git", true, false},
		ignoreMatchCase{".jjj", true, false},
		ignoreMatchCase{".gitignore", false, false},
		ignoreMatchCase{".github", true, false},
		ignoreMatchCase{".github/workflows/ci.yml", false, false},
		ignoreMatchCase{".gitkeep", false, false},
		ignoreMatchCase{"src/main.go", false, false},
		ignoreMatchCase{"cache", true, false},
		ignoreMatchCase{"builds", true, false},
	)
	checkIgnoreMatches(t, NewIgnore(t.TempDir()), cases)
}

// recordRuleReads makes m record the rule files it reads, relative to root.
func recordRuleReads(m *Ignore, root string) func() map[string]int {
	var mu sync.Mutex
	reads := make(map[string]int)
	m.read = func(rel string) ([]byte, error) {
		mu.Lock()
		reads[rel]++
		mu.Unlock()
		return m.readRuleFile(rel)
	}
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(reads)
	}
}

// walkIgnore walks root as the scanner does: a directory is matched before
// the walk enters it, and skipped when ignored. It returns the paths kept.
func walkIgnore(t testing.TB, m *Ignore, root, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range ents {
		rel := path.Join(dir, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		ign, err := m.Match(rel, e.IsDir())
		if err != nil {
			t.Fatalf("Match(%q): %v", rel, err)
		}
		if ign {
			continue
		}
		kept = append(kept, rel)
		if e.IsDir() {
			kept = append(kept, walkIgnore(t, m, root, rel)...)
		}
	}
	return kept
}

func TestIgnoreReadsOnlyWhatTheWalkReaches(t *testing.T) {
	t.Parallel()
	root := writeIgnoreTree(t, map[string]string{
		".gitignore":                  "ignored/\n",
		"ignored/.gitignore":          "!*\n",
		"ignored/a/.gitignore":        "!*\n",
		".git/.gitignore":             "!*\n",
		".git/info/exclude":           "*\n",
		".Git/.gitignore":             "!*\n",
		".hg/.gitignore":              "x\n",
		"node_modules/.gitignore":     "!*\n",
		"node_modules/p/.gitignore":   "!*\n",
		"ok/.gitignore":               "*.o\n",
		"ok/deep/.gitignore":          "!keep.o\n",
		"ok/deep/keep.o":              "",
		"ok/deep/x.o":                 "",
		"ok/deep/er/x.c":              "",
		"src/.git/config":             "",
		"src/main.go":                 "",
		"src/node_modules/.gitignore": "",
	})
	m := NewIgnore(root)
	reads := recordRuleReads(m, root)
	kept := walkIgnore(t, m, root, "")
	slices.Sort(kept)
	wantKept := []string{".gitignore", "ok", "ok/.gitignore", "ok/deep", "ok/deep/.gitignore", "ok/deep/er", "ok/deep/er/x.c", "ok/deep/keep.o", "src", "src/main.go"}
	if !slices.Equal(kept, wantKept) {
		t.Errorf("walk kept %q, want %q", kept, wantKept)
	}
	// Match deep paths directly too, twice over: nothing new is read.
	for range 2 {
		for _, p := range []string{"ignored/a/b/c.txt", ".git/objects/x", ".Git/x", ".hg/store/y", "node_modules/p/q/r.js", "src/.git/config", "ok/deep/er/x.c", "ok/deep/keep.o"} {
			if _, err := m.Match(p, false); err != nil {
				t.Fatal(err)
			}
		}
		kept2 := walkIgnore(t, m, root, "")
		slices.Sort(kept2)
		if !slices.Equal(kept2, wantKept) {
			t.Errorf("second walk kept %q, want %q", kept2, wantKept)
		}
	}
	got := reads()
	for p, n := range got {
		for _, bad := range []string{"ignored/", ".git/", ".Git/", ".hg/", "node_modules/", "src/.git/", "src/node_modules/"} {
			if strings.HasPrefix(p, bad) {
				t.Errorf("read %s, inside an ignored directory", p)
			}
		}
		if n != 1 {
			t.Errorf("read %s %d times, want once", p, n)
		}
	}
	for _, p := range []string{".ckptignore", ".gitignore", "ok/.gitignore", "ok/deep/.gitignore", "ok/deep/er/.gitignore", "src/.gitignore"} {
		if got[p] != 1 {
			t.Errorf("reads of %s = %d, want 1 (all reads: %v)", p, got[p], got)
		}
	}
}

func TestIgnoreRuleFileErrors(t *testing.T) {
	t.Parallel()
	root := writeIgnoreTree(t, map[string]string{"sub/.gitignore": "*.x\n", "other/a.x": ""})
	m := NewIgnore(root)
	broken := errors.New("injected read error")
	fail := true
	m.read = func(name string) ([]byte, error) {
		if fail && strings.HasSuffix(filepath.ToSlash(name), "sub/.gitignore") {
			return nil, broken
		}
		return m.readRuleFile(name)
	}
	if _, err := m.Match("sub/a.x", false); !errors.Is(err, broken) {
		t.Errorf("Match under an unreadable .gitignore: got %v, want it to wrap %v", err, broken)
	} else if !strings.Contains(err.Error(), "sub/.gitignore") {
		t.Errorf("error %q does not name the rule file", err)
	}
	if ign, err := m.Match("other/a.x", false); err != nil || ign {
		t.Errorf("Match elsewhere = %v, %v; want false, nil", ign, err)
	}
	// The failure is not cached: once the file reads, the rules apply.
	fail = false
	if ign, err := m.Match("sub/a.x", false); err != nil || !ign {
		t.Errorf("Match after the error cleared = %v, %v; want true, nil", ign, err)
	}

	m2 := NewIgnore(root)
	m2.read = func(name string) ([]byte, error) { return nil, broken }
	if _, err := m2.Match("a", false); !errors.Is(err, broken) || !strings.Contains(err.Error(), ".ckptignore") {
		t.Errorf("Match with an unreadable .ckptignore: %v", err)
	}
}

func TestIgnoreRuleFilesGitSkips(t *testing.T) {
	t.Parallel()
	outside := writeIgnoreTree(t, map[string]string{".gitignore": "*\n", "rules": "*\n"})
	root := writeIgnoreTree(t, map[string]string{
		"dirnamed/.gitignore/x": "", // a directory called .gitignore
		"real/inner/.gitignore": "*\n",
	})
	if err := os.Symlink(filepath.Join(outside, "rules"), filepath.Join(root, ".ckptignore")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "rules"), filepath.Join(root, ".gitignore")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfifo", filepath.Join(root, "fifo", ".gitignore")).CombinedOutput(); err != nil {
		t.Skipf("mkfifo: %v %s", err, out)
	}
	m := NewIgnore(root)
	reads := recordRuleReads(m, root)
	done := make(chan struct{})
	go func() {
		defer close(done)
		checkIgnoreMatches(t, m, []ignoreMatchCase{
			{"a", false, false},             // symlinked .gitignore and .ckptignore: not read
			{"dirnamed/x", false, false},    // .gitignore is a directory
			{"fifo/x", false, false},        // .gitignore is a FIFO: skipped, not blocked on
			{"linked/x", false, false},      // under a symlinked directory: nothing read
			{"alias/inner/x", false, false}, // same, even when the link stays inside
			{"real/inner/x", false, true},
		})
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a safety net for a loaded machine; Match takes milliseconds
		t.Fatal("Match blocked (opening a FIFO?)")
	}
	for p := range reads() {
		if strings.HasPrefix(p, "linked/") || strings.HasPrefix(p, "alias/") || strings.HasPrefix(p, "..") {
			t.Errorf("read %s, through a symlinked directory", p)
		}
	}
}

func TestIgnoreOddPaths(t *testing.T) {
	t.Parallel()
	root := writeIgnoreTree(t, map[string]string{".gitignore": "*\n!*/\n!ok\n[\n\\\n"})
	m := NewIgnore(root)
	bad := []string{"", "/", "/a", "a/", "a//b", "./a", "a/.", "a/./b", ".", "..", "../a", "a/..", "a/../b", "a\x00b", "//"}
	for _, p := range bad {
		for _, isDir := range []bool{false, true} {
			if ign, err := m.Match(p, isDir); err == nil {
				t.Errorf("Match(%q, %v) = %v, nil; want an error", p, isDir, ign)
			}
		}
	}
	good := []string{"ok", "a", "a\\b", "...", "a..b", ".a.", "a b", " ", "\t", "\n", "\xff\xfe", "é/ü", "[", "*", "?", "!", "#",
		strings.Repeat("a/", 200) + "ok", strings.Repeat("x", 5000), strings.Repeat("*", 300),
		strings.Repeat("d", 300) + "/f", strings.Repeat("d/", 3000) + "f"} // names too long to exist
	for _, p := range good {
		for _, isDir := range []bool{false, true} {
			if _, err := m.Match(p, isDir); err != nil {
				t.Errorf("Match(%q, %v): %v", p, isDir, err)
			}
		}
	}
}

func TestIgnoreConcurrent(t *testing.T) {
	t.Parallel()
	root := writeIgnoreTree(t, map[string]string{
		".gitignore":       "*.o\n!keep.o\nlogs/\n",
		"a/.gitignore":     "!*.o\n*.tmp\n",
		"a/b/.gitignore":   "*.o\n",
		"a/b/c/.gitignore": "!x.tmp\n",
	})
	var paths []string
	for _, d := range []string{"", "a", "a/b", "a/b/c", "logs", "a/logs", "node_modules/x", "q"} {
		for _, f := range []string{"x.o", "keep.o", "x.tmp", "y.go", "logs", "sub"} {
			paths = append(paths, path.Join(d, f))
		}
	}
	want := make(map[string]bool)
	seq := NewIgnore(root)
	for _, p := range paths {
		ign, err := seq.Match(p, strings.HasSuffix(p, "sub"))
		if err != nil {
			t.Fatal(err)
		}
		want[p] = ign
	}
	for round := range 20 {
		m := NewIgnore(root)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				order := slices.Clone(paths)
				rand.New(rand.NewPCG(uint64(round), uint64(g))).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				for _, p := range order {
					ign, err := m.Match(p, strings.HasSuffix(p, "sub"))
					if err != nil {
						t.Error(err)
						return
					}
					if ign != want[p] {
						t.Errorf("concurrent Match(%q) = %v, want %v", p, ign, want[p])
					}
				}
			}()
		}
		wg.Wait()
	}
}

func TestIgnorePathologicalPatternIsFast(t *testing.T) {
	t.Parallel()
	root := writeIgnoreTree(t, map[string]string{".gitignore": strings.Repeat("*a", 40) + "b\n" + strings.Repeat("**/", 40) + "z\n"})
	m := NewIgnore(root)
	start := time.Now()
	for _, p := range []string{strings.Repeat("a", 4000) + "c", strings.Repeat("a/", 100) + "y"} {
		if _, err := m.Match(p, false); err != nil {
			t.Fatal(err)
		}
	}
	// Backtracking over these patterns would take longer than the age of
	// the universe, a linear matcher milliseconds: a minute tells them
	// apart on any machine, however loaded.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("matching took %v", d)
	}
}

// FuzzIgnoreMatch checks that Match never panics, fails only on
// non-canonical paths, and gives the same answer twice and on a fresh
// Ignore. Rules apply at the root and in a/ and a/b/.
func FuzzIgnoreMatch(f *testing.F) {
	for _, c := range gitCorpus {
		for _, p := range c.paths {
			f.Add(c.rules[".gitignore"], strings.TrimSuffix(p, "/"), strings.HasSuffix(p, "/"))
		}
	}
	f.Add("a/**/b\n!a/x/b", "a/x/b", false)
	f.Add("[[:alpha:]-z]\n[z-a]\n[\\", "a/b/-", true)
	root := f.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rules, rel string, isDir bool) {
		read := func(name string) ([]byte, error) {
			if filepath.Base(name) == ckptignoreName {
				return nil, nil
			}
			return []byte(rules), nil
		}
		m := NewIgnore(root)
		m.read = read
		ign, err := m.Match(rel, isDir)
		if (err == nil) != canonicalRel(rel) {
			t.Fatalf("Match(%q): err %v, canonical %v", rel, err, canonicalRel(rel))
		}
		if err != nil {
			return
		}
		again, err := m.Match(rel, isDir)
		if err != nil || again != ign {
			t.Fatalf("second Match(%q) = %v, %v; first %v", rel, again, err, ign)
		}
		fresh := NewIgnore(root)
		fresh.read = read
		if got, _ := fresh.Match(rel, isDir); got != ign {
			t.Fatalf("fresh Match(%q) = %v, cached %v", rel, got, ign)
		}
	})
}

func BenchmarkIgnoreMatch(b *testing.B) {
	root := writeIgnoreTree(b, map[string]string{
		".gitignore":         "*.o\n*.a\n/bin/\n**/tmp/**\n*.log\n!important.log\ndoc/*.html\n",
		"src/.gitignore":     "*.gen.go\n",
		"src/pkg/.gitignore": "!keep.o\n",
	})
	var paths []string
	for _, d := range []string{"src", "src/pkg", "src/pkg/sub", "docs", "doc"} {
		for _, f := range []string{"main.go", "x.o", "keep.o", "y.gen.go", "z.log", "index.html"} {
			paths = append(paths, d+"/"+f)
		}
	}
	m := NewIgnore(root)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := m.Match(paths[i%len(paths)], false); err != nil {
			b.Fatal(err)
		}
	}
}

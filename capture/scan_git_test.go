package capture

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
)

// TestScanMatchesGitRandom compares what a scan records with what git
// lists as untracked and not ignored (`git ls-files --others
// --exclude-standard`) over a fixed tree, for random rule files at several
// depths. The rules lean toward "dir/" rules and negations, and some rule
// files hold only directory rules, so a directory whose applicable rules
// cannot match a file (matchRules' shortcut) sits next to and below ones
// whose rules can. 150 rounds; CKPT_LONG=1 runs 1,500.
func TestScanMatchesGitRandom(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	env := newGitRepo(t, dir)
	dirs := []string{"a", "a/b", "a/b/c", "a/lib", "d", "d/a", "d/a/b", "lib", "lib/x"}
	var files []string
	for _, d := range append([]string{""}, dirs...) {
		for _, f := range []string{"a", "b", "c", "c.log", "x.txt", "lib.go"} {
			if p := path.Join(d, f); !slices.Contains(dirs, p) {
				files = append(files, p)
			}
		}
	}
	for _, f := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(f)), "x")
	}
	ruleFiles := []string{".gitignore", "a/.gitignore", "a/b/.gitignore", "d/.gitignore", "d/a/.gitignore", "lib/.gitignore"}
	tokens := []string{"a", "b", "c", "lib", "x", "*", "*", "**", "?", "*.log", "*.txt", "/", "[ab]", "[!a]"}
	rng := rand.New(rand.NewPCG(11, 12))
	pattern := func(dirOnly bool) string {
		var s strings.Builder
		if rng.IntN(4) == 0 {
			s.WriteString("!")
		}
		if rng.IntN(4) == 0 {
			s.WriteString("/")
		}
		for n := 1 + rng.IntN(3); n > 0; n-- {
			s.WriteString(tokens[rng.IntN(len(tokens))])
		}
		if dirOnly {
			s.WriteString("/")
		}
		return s.String()
	}
	rules := func() string {
		allDirs := rng.IntN(2) == 0 // a file of directory rules only
		var lines []string
		for n := 1 + rng.IntN(4); n > 0; n-- {
			lines = append(lines, pattern(allDirs || rng.IntN(3) == 0))
		}
		return strings.Join(lines, "\n") + "\n"
	}
	rounds := 150
	if os.Getenv("CKPT_LONG") != "" {
		rounds = 1500
	}
	ws, err := NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	c := New(ws, nil, cas.NewMemory())
	compared := 0
	for round := range rounds {
		for _, f := range ruleFiles {
			content := ""
			if f == ".gitignore" || rng.IntN(2) == 0 {
				content = rules()
			}
			writeFile(t, filepath.Join(dir, filepath.FromSlash(f)), content)
		}
		cmd := exec.Command("git", "ls-files", "--others", "--exclude-standard", "-z")
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git ls-files: %v\n%s", err, stderr.Bytes())
		}
		want := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(out) == 0 {
			want = nil
		}
		slices.Sort(want)
		res, err := c.Scan(context.Background(), ScanOptions{}, nil, Hash)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range res.Manifest.Files {
			got = append(got, f.Path)
		}
		slices.Sort(got)
		compared += len(files) + len(ruleFiles)
		if !slices.Equal(got, want) {
			var msg strings.Builder
			for _, f := range ruleFiles {
				data, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
				fmt.Fprintf(&msg, "%s:\n%s", f, data)
			}
			t.Fatalf("round %d: the scan recorded\n  %q\ngit lists\n  %q\nonly scan: %q\nonly git: %q\n%s",
				round, got, want, minus(got, want), minus(want, got), msg.String())
		}
	}
	t.Logf("%d random rule sets, %d paths compared with git", rounds, compared)
}

// minus returns the elements of a not in b (both sorted).
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			out = append(out, s)
		}
	}
	return out
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

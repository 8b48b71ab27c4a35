package capture_test

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/capture"
)

// FuzzWorkspaceRel resolves arbitrary paths in a workspace holding
// symlinks to a directory outside it and to a directory inside it. Rel must
// never panic, and a path it accepts must be canonical (relative, clean,
// slash-separated, no "..", not under .git) and lie inside the root: its
// existing parent directories, symlinks resolved, stay under the root.
// A seed starting with "ROOT/" or "GIVEN/" is made absolute under the
// workspace's resolved or given root. Seeds: testdata/fuzz/FuzzWorkspaceRel.
func FuzzWorkspaceRel(f *testing.F) {
	base := f.TempDir()
	given := filepath.Join(base, "ws-link") // the workspace as given: a symlink to it
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "sub", "deep"), filepath.Join(root, ".git"), filepath.Join(outside, "o")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	for _, l := range [][2]string{
		{outside, filepath.Join(root, "out")},
		{"../outside", filepath.Join(root, "out-rel")},
		{filepath.Join(root, "sub"), filepath.Join(root, "in")},
		{"sub/deep", filepath.Join(root, "in-rel")},
		{"../../outside/o", filepath.Join(root, "sub", "up")},
		{root, given},
		{"missing", filepath.Join(root, "dangling")},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			f.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(root, "a.txt"), filepath.Join(root, "sub", "b.txt"), filepath.Join(outside, "o", "secret")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	w, err := capture.NewWorkspace(given)
	if err != nil {
		f.Fatal(err)
	}
	real := w.Root()

	f.Add("a.txt")
	f.Fuzz(func(t *testing.T, p string) {
		if rest, ok := strings.CutPrefix(p, "ROOT/"); ok {
			p = filepath.Join(real, rest)
		} else if rest, ok := strings.CutPrefix(p, "GIVEN/"); ok {
			p = filepath.Join(given, rest)
		}
		rel, err := w.Rel(p)
		if err != nil {
			return
		}
		if rel == "" || rel == "." || path.IsAbs(rel) || filepath.IsAbs(rel) || path.Clean(rel) != rel || strings.Contains(rel, `\`) && filepath.Separator == '\\' {
			t.Fatalf("Rel(%q) = %q: not a canonical relative path", p, rel)
		}
		for _, part := range strings.Split(rel, "/") {
			if part == ".." || part == "." || part == "" || part == ".git" {
				t.Fatalf("Rel(%q) = %q: element %q", p, rel, part)
			}
		}
		// The longest existing prefix of the parent, symlinks resolved,
		// must be the root or below it.
		dir := filepath.Dir(filepath.Join(real, filepath.FromSlash(rel)))
		for {
			if _, err := os.Lstat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
			dir = filepath.Dir(dir)
		}
		resolved, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return // a name the file system refuses (NUL, too long): nothing to resolve
		}
		if r, err := filepath.Rel(real, resolved); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			t.Fatalf("Rel(%q) = %q, whose parent resolves to %s, outside %s", p, rel, resolved, real)
		}
	})
}

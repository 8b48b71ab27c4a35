package capture

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

func TestVCSNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		elem          string
		posix, onWind bool
	}{
		{".git", true, true},
		{".GIT", true, true},
		{".Git", true, true},
		{".gIt", true, true},
		{".HG", true, true},
		{".Svn", true, true},
		{".JJ", true, true},
		{".bZr", true, true},
		{"GIT~1", false, true},
		{"git~2", false, true},
		{"HG~1", false, true},
		{"SVN~12", false, true},
		{"JJ~1", false, true},
		{"BZR~1", false, true},
		{".git.", false, true},
		{".git ", false, true},
		{".git. .", false, true},
		{".git::$INDEX_ALLOCATION", false, true},
		{".GIT:stream", false, true},
		{".gitignore", false, false},
		{"git", false, false},
		{".git2", false, false},
		{"GIT~", false, false},
		{"GIT~1a", false, false},
		{"GITX~1", false, false},
		{"x.git", false, false},
		{"", false, false},
	} {
		if got := vcsName(tc.elem, false); got != tc.posix {
			t.Errorf("vcsName(%q, posix) = %v, want %v", tc.elem, got, tc.posix)
		}
		if got := vcsName(tc.elem, true); got != tc.onWind {
			t.Errorf("vcsName(%q, windows) = %v, want %v", tc.elem, got, tc.onWind)
		}
	}
}

// Every case variant of a VCS directory is refused by Rel, capture, the
// restore side and the scan, whatever the file system's case rules.
func TestVCSCaseVariantsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	for _, p := range []string{".GIT/HEAD", ".Git/config", "sub/.Hg/store", ".SVN/entries", "a/.jJ/x", ".Bzr/x"} {
		f.write(t, p, "vcs data "+p, 0o644)
		if _, err := f.ws.Rel(p); !errors.Is(err, ErrVCSDir) {
			t.Errorf("Rel(%q) = %v, want ErrVCSDir", p, err)
		}
		if _, err := f.c.Capture(ctx, p); !errors.Is(err, ErrVCSDir) {
			t.Errorf("Capture(%q) = %v, want ErrVCSDir", p, err)
		}
		if e, err := f.ws.Inspect(p); err != nil || e.Kind != Unsafe || !errors.Is(e.Reason, ErrVCSDir) {
			t.Errorf("Inspect(%q) = %+v, %v; want Unsafe/ErrVCSDir", p, e, err)
		}
		if _, err := f.c.State(ctx, p); !errors.Is(err, ErrVCSDir) {
			t.Errorf("State(%q) = %v, want ErrVCSDir", p, err)
		}
		if _, err := f.ws.Stage(p, "t", strings.NewReader("x"), 0o644); !errors.Is(err, ErrVCSDir) {
			t.Errorf("Stage(%q) = %v, want ErrVCSDir", p, err)
		}
		if err := f.ws.Remove(p, nil); !errors.Is(err, ErrVCSDir) {
			t.Errorf("Remove(%q) = %v, want ErrVCSDir", p, err)
		}
		if b, err := os.ReadFile(filepath.Join(f.root, p)); err != nil || string(b) != "vcs data "+p {
			t.Errorf("%s changed: %q, %v", p, b, err)
		}
	}
	f.write(t, "kept.txt", "k", 0o644)
	f.write(t, "sub/.git", "gitdir: ../.git/worktrees/sub", 0o644) // a worktree's .git file
	sr, err := f.c.Scan(ctx, ScanOptions{}, nil, Hash)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range sr.Manifest.Files {
		got = append(got, e.Path)
	}
	if !slices.Equal(got, []string{"kept.txt"}) {
		t.Errorf("scan recorded %v, want only kept.txt", got)
	}
}

// A file swapped for a symlink to another file in the workspace between
// Inspect and the read is refused: OpenFile reads only the file Lstat saw.
func TestOpenFileFollowsNoLink(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(t, "secret", "other bytes", 0o644)
	if err := os.Symlink("secret", filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.ws.OpenFile("link"); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenFile(link) = %v, want ErrSymlink", err)
	}
	if err := os.Mkdir(filepath.Join(f.root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(f.root, "alias")); err != nil {
		t.Fatal(err)
	}
	f.write(t, "real/x", "x", 0o644)
	// An in-workspace symlinked parent is not followed either (os.Root
	// alone would follow it).
	if _, _, err := f.ws.OpenFile("alias/x"); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenFile(alias/x) = %v, want ErrSymlink", err)
	}
	if _, err := f.ws.Stage("alias/y", "t", strings.NewReader("y"), 0o644); !errors.Is(err, ErrSymlink) {
		t.Errorf("Stage(alias/y) = %v, want ErrSymlink", err)
	}
	if _, err := os.Lstat(filepath.Join(f.root, "real", "y")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stage wrote through an in-workspace symlinked parent: %v", err)
	}
}

// Stage, Commit and Remove work inside the parent's handle; a parent
// swapped between Stage and Commit makes Commit refuse.
func TestStageCommitRemove(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, err := f.ws.Stage("new/dir/a.txt", "7", strings.NewReader("hello"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ws.Commit(s); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(f.root, "new", "dir", "a.txt")
	fi, err := os.Lstat(p)
	if b, _ := os.ReadFile(p); err != nil || string(b) != "hello" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("committed file = %q, %v, %v; want hello 0755", b, fi, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("staging left files: %v", ents)
	}

	s, err = f.ws.Stage("new/dir/a.txt", "8", strings.NewReader("second"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// Swap new/dir for another directory holding a.txt.
	if err := os.Rename(filepath.Join(f.root, "new", "dir"), filepath.Join(f.root, "moved")); err != nil {
		t.Fatal(err)
	}
	f.write(t, "new/dir/a.txt", "third", 0o644)
	if err := f.ws.Commit(s); !errors.Is(err, ErrSymlink) {
		t.Errorf("Commit into a replaced parent = %v, want ErrSymlink (the swap)", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "third" {
		t.Errorf("Commit wrote into the replacing directory: %q", b)
	}

	if err := f.ws.Remove("new/dir/a.txt", []string{"new/dir", "new"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(f.root, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove left the emptied directories: %v", err)
	}
	f.ws.CleanStaged([]string{"moved/a.txt"}, "8")
	if ents, _ := os.ReadDir(filepath.Join(f.root, "moved")); len(ents) != 1 || ents[0].Name() != "a.txt" {
		t.Errorf("CleanStaged left %v, want only a.txt", ents)
	}
}

// SyncDirs fsyncs every directory on the way to the paths once, the root
// included, and skips what is missing or reached through a symlink.
func TestSyncDirsOncePerDirectory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(t, "a/b/x", "x", 0o644)
	f.write(t, "a/b/y", "y", 0o644)
	f.write(t, "a/z", "z", 0o644)
	f.write(t, "c/w", "w", 0o644)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(f.root, "out")); err != nil {
		t.Fatal(err)
	}
	var synced []string
	f.ws.syncDir = func(d *os.File) error {
		fi, err := d.Stat()
		if err != nil || !fi.IsDir() {
			t.Errorf("synced %s: %v, %v", d.Name(), fi, err)
		}
		rel, _ := filepath.Rel(f.root, d.Name())
		synced = append(synced, filepath.ToSlash(rel))
		return d.Sync()
	}
	err := f.ws.SyncDirs([]string{"a/b/x", "a/b/y", "a/z", "c/w", "top", "gone/dir/v", "out/q"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(synced)
	if want := []string{".", "a", "a/b", "c"}; !slices.Equal(synced, want) {
		t.Errorf("synced %v, want %v", synced, want)
	}
}

// Reads go through the root handle: a capture through a symlinked parent
// that leads out reads nothing, and a workspace reached by a link works.
func TestCaptureThroughRootHandle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	outside := t.TempDir()
	secret := []byte("outside secret bytes")
	if err := os.WriteFile(filepath.Join(outside, "s"), secret, 0o644); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o755)
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	ws, err := NewWorkspace(filepath.Join(base, "link"))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(real, "out")); err != nil {
		t.Fatal(err)
	}
	idx, err := checkpoints.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	if _, err := idx.BeginTurn(ctx, "t", nil, nil); err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	c := New(ws, idx, nil)
	for _, p := range []string{filepath.Join(base, "link", "f"), "f"} {
		st, err := c.StateWith(ctx, mustRel(t, ws, p), func(ctx context.Context, r io.Reader) (cas.ID, int64, error) {
			var b bytes.Buffer
			if _, err := b.ReadFrom(r); err != nil {
				return cas.ID{}, 0, err
			}
			stored = append(stored, b.Bytes())
			return Hash(ctx, bytes.NewReader(b.Bytes()))
		})
		if err != nil || st.Size != 6 {
			t.Errorf("StateWith(%s) = %+v, %v", p, st, err)
		}
	}
	if _, err := ws.Rel("out/s"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("Rel(out/s) = %v, want ErrOutsideWorkspace", err)
	}
	if _, err := c.StateWith(ctx, "out/s", Hash); !errors.Is(err, ErrSymlink) {
		t.Errorf("StateWith(out/s) = %v, want ErrSymlink", err)
	}
	for _, b := range stored {
		if bytes.Equal(b, secret) {
			t.Error("an outside file's bytes were read")
		}
	}
}

func mustRel(t *testing.T, ws *Workspace, p string) string {
	t.Helper()
	rel, err := ws.Rel(p)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// Rel resolves symlinked parents through the root handle, by Lstat and
// Readlink: absolute targets inside, chains, "..", loops and escapes.
func TestRelResolvesLinksInsideRoot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	os.MkdirAll(filepath.Join(f.root, "real", "sub"), 0o755)
	outside := t.TempDir()
	for link, target := range map[string]string{
		"abs":    filepath.Join(f.root, "real"),
		"c1":     "c2",
		"c2":     "real/sub",
		"dotdot": "real/..",
		"up":     "../" + filepath.Base(outside),
		"absout": outside,
		"loop":   "loop",
		"inner":  "sub",
	} {
		p := filepath.Join(f.root, link)
		if link == "inner" {
			p = filepath.Join(f.root, "real", link)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"abs/x", "real/x", nil},
		{"c1/y", "real/sub/y", nil},
		{"dotdot/x", "x", nil},
		{"real/inner/z", "real/sub/z", nil},
		{"abs/inner/missing/z", "real/sub/missing/z", nil},
		{"c1", "c1", nil}, // the last element is never followed
		{"up/x", "", ErrOutsideWorkspace},
		{"absout/x", "", ErrOutsideWorkspace},
		{"real/../up/x", "", ErrOutsideWorkspace},
		{"loop/x", "", errTooManyLinks},
	} {
		got, err := f.ws.Rel(tc.in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Rel(%q) = %q, %v; want error %v", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Rel(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestVCSNamesStartWithADot guards vcsName's shortcut for names without a
// leading dot.
func TestVCSNamesStartWithADot(t *testing.T) {
	t.Parallel()
	for _, v := range vcsNames {
		if !strings.HasPrefix(v, ".") {
			t.Errorf("%q does not start with a dot: vcsName's shortcut would miss it", v)
		}
	}
	if vcsName("", false) || vcsName("git", false) || !vcsName(".GiT", false) || !vcsName("GIT~1", true) {
		t.Error("vcsName: wrong answer around the shortcut")
	}
}

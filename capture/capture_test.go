package capture

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

type fixture struct {
	root string
	ws   *Workspace
	idx  *checkpoints.Index
	c    *Capturer
	turn checkpoints.Checkpoint
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	ws, err := NewWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := checkpoints.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	turn, err := idx.BeginTurn(ctx, "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{root: root, ws: ws, idx: idx, c: New(ws, idx, cas.NewMemory()), turn: turn}
}

func (f *fixture) write(t *testing.T, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) snaps(t *testing.T) []checkpoints.FileSnap {
	t.Helper()
	cp, err := f.idx.Turn(context.Background(), f.turn.Turn)
	if err != nil {
		t.Fatal(err)
	}
	return cp.Files
}

func TestRelCanonical(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	os.MkdirAll(filepath.Join(f.root, "real", "sub"), 0o755)
	outside := t.TempDir()
	if err := os.Symlink("real", filepath.Join(f.root, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.root, "out")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		want string
		err  error
	}{
		{"a.txt", "a.txt", nil},
		{"./a.txt", "a.txt", nil},
		{filepath.Join(f.root, "a.txt"), "a.txt", nil},
		{"real/sub/../x.go", "real/x.go", nil},
		{"alias/sub/x.go", "real/sub/x.go", nil},
		{filepath.Join(f.root, "alias", "x.go"), "real/x.go", nil},
		{"new/dirs/x.go", "new/dirs/x.go", nil},
		{"alias/new/x.go", "real/new/x.go", nil},
		{".hidden", ".hidden", nil},
		{"sp ace/ünï.txt", "sp ace/ünï.txt", nil},
		{"../x", "", ErrOutsideWorkspace},
		{"/etc/passwd", "", ErrOutsideWorkspace},
		{"out/x", "", ErrOutsideWorkspace},
		{"out/deeper/x", "", ErrOutsideWorkspace},
		{".git/config", "", ErrVCSDir},
		{"sub/.git/HEAD", "", ErrVCSDir},
		{".", "", ErrNotRegular},
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

func TestCaptureStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "run.sh", "#!/bin/sh\r\n\xff\x00", 0o755)
	os.Mkdir(filepath.Join(f.root, "adir"), 0o755)
	os.Symlink("run.sh", filepath.Join(f.root, "link"))

	res, err := f.c.Capture(ctx, filepath.Join(f.root, "run.sh"))
	if err != nil || !res.Recorded || res.Path != "run.sh" {
		t.Fatalf("Capture(run.sh) = %+v, %v", res, err)
	}
	want := cas.Sum([]byte("#!/bin/sh\r\n\xff\x00"))
	if res.Snap.Content == nil || *res.Snap.Content != want || res.Snap.Mode != 0o755 || res.Snap.Size != 13 {
		t.Errorf("snap = %+v; want exact bytes, 0755, 13 bytes", res.Snap)
	}
	// Relative and absolute spellings are one path: the second is a no-op.
	f.write(t, "run.sh", "changed", 0o644)
	res, err = f.c.Capture(ctx, "run.sh")
	if err != nil || res.Recorded || *res.Snap.Content != want {
		t.Fatalf("second Capture = %+v, %v; want the first snapshot kept", res, err)
	}

	res, err = f.c.Capture(ctx, "brand/new/file.go")
	if err != nil || !res.Recorded || res.Snap.Content != nil {
		t.Fatalf("Capture(missing) = %+v, %v; want recorded as absent", res, err)
	}
	if got := res.Snap.Dirs; len(got) != 2 || got[0] != "brand/new" || got[1] != "brand" {
		t.Errorf("missing dirs = %v, want [brand/new brand]", got)
	}

	for _, tc := range []struct {
		path string
		err  error
	}{
		{"adir", ErrNotRegular},
		{"link", ErrSymlink},
		{"../escape", ErrOutsideWorkspace},
	} {
		if _, err := f.c.Capture(ctx, tc.path); !errors.Is(err, tc.err) {
			t.Errorf("Capture(%s) = %v, want %v", tc.path, err, tc.err)
		}
	}
	if n := len(f.snaps(t)); n != 2 {
		t.Errorf("%d snaps recorded, want 2 (refused paths record nothing)", n)
	}
}

func TestUnreadableRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "secret.txt", "s", 0o644)
	f.c.open = func(_ *opener, rel string) (*os.File, fs.FileInfo, error) {
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrPermission}
	}
	if _, err := f.c.Capture(ctx, "secret.txt"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Capture(unreadable) = %v, want permission error", err)
	}
	if n := len(f.snaps(t)); n != 0 {
		t.Fatalf("unreadable file recorded %d snaps; it must record nothing, never 'absent'", n)
	}
}

func TestUnreadableAsUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root reads any file; TestUnreadableRecordsNothing covers this through the seam")
	}
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "secret.txt", "s", 0o000)
	if _, err := f.c.Capture(ctx, "secret.txt"); err == nil {
		t.Fatal("Capture of an unreadable file succeeded")
	}
	if n := len(f.snaps(t)); n != 0 {
		t.Fatalf("unreadable file recorded %d snaps", n)
	}
}

func TestInspectAndRestoreRefuseSymlinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(f.root, "out"))
	os.WriteFile(filepath.Join(outside, "victim"), []byte("keep"), 0o644)

	e, err := f.ws.Inspect("out/victim")
	if err != nil || e.Kind != Unsafe || !errors.Is(e.Reason, ErrSymlink) {
		t.Fatalf("Inspect through a symlinked parent = %+v, %v; want Unsafe/ErrSymlink", e, err)
	}
	if _, err := f.ws.Stage("out/victim", "t", nil, 0o644); !errors.Is(err, ErrSymlink) {
		t.Errorf("Stage through a symlinked parent = %v, want ErrSymlink", err)
	}
	if err := f.ws.Remove("out/victim", nil); !errors.Is(err, ErrSymlink) {
		t.Errorf("Remove through a symlinked parent = %v, want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "keep" {
		t.Errorf("file outside the workspace changed: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files appeared outside the workspace: %v", ents)
	}
}

func FuzzRel(f *testing.F) {
	for _, s := range []string{"a", "../a", "/etc/passwd", "a/../../b", "a/./b//c", ".git/x", "x/.git", "", ".", "..", "a\x00b", "ü/ñ"} {
		f.Add(s)
	}
	root := f.TempDir()
	ws, err := NewWorkspace(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := ws.Rel(p)
		if err != nil {
			return
		}
		// Whatever is accepted is canonical, relative, and inside the root.
		if rel == "" || filepath.IsAbs(rel) || rel != filepath.ToSlash(filepath.Clean(rel)) {
			t.Fatalf("Rel(%q) = %q: not a clean relative path", p, rel)
		}
		if _, inside := within(ws.Root(), ws.Abs(rel)); !inside {
			t.Fatalf("Rel(%q) = %q escapes the workspace", p, rel)
		}
		again, err := ws.Rel(rel)
		if err != nil || again != rel {
			t.Fatalf("Rel(Rel(%q)) = %q, %v; want %q (idempotent)", p, again, err, rel)
		}
	})
}

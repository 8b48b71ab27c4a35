//go:build linux

package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mountForTest mounts fstype (source src, flags) at dir and unmounts it at
// cleanup; it skips the test where mounting is not allowed.
func mountForTest(t *testing.T, src, dir, fstype string, flags uintptr) {
	t.Helper()
	if err := unix.Mount(src, dir, fstype, flags, ""); err != nil {
		t.Skipf("cannot mount %s at %s here: %v", fstype, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// A barrier's one syncfs reaches the workspace root's file system only: a
// directory below the root that is another file system mounted there (a
// tmpfs) is not covered, so a file staged in it is fsynced itself, while a
// bind mount of the root's own file system is covered. Files staged in
// both land once the barrier has synced, and a failed sync commits none of
// them.
func TestBarrierCoversOnlyItsFileSystem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, d := range []string{"tmp", "bind"} {
		if err := os.Mkdir(filepath.Join(f.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mountForTest(t, "none", filepath.Join(f.root, "tmp"), "tmpfs", 0)
	other := t.TempDir() // the same file system as the root's (both TempDirs)
	mountForTest(t, other, filepath.Join(f.root, "bind"), "", unix.MS_BIND)

	b := f.ws.openBarrier()
	defer b.Close()
	for _, c := range []struct {
		dir  string
		want bool
	}{{"", true}, {"tmp", false}, {"bind", true}} {
		fi, err := os.Stat(filepath.Join(f.root, c.dir))
		if err != nil {
			t.Fatal(err)
		}
		rootFi, err := os.Stat(f.root)
		if err != nil {
			t.Fatal(err)
		}
		if c.dir == "bind" && !sameDevice(rootFi, fi) {
			t.Skip("the temp directories are on different file systems here")
		}
		if got := b.covers(fi); got != c.want {
			t.Errorf("covers(%q) = %v, want %v", c.dir, got, c.want)
		}
	}

	var staged []Staged
	for _, rel := range []string{"tmp/a.txt", "bind/b.txt", "c.txt"} {
		s, err := f.ws.StageFor(b, rel, "7", strings.NewReader("new "+rel), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, s)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, s := range staged {
		if err := f.ws.Commit(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"tmp/a.txt", "bind/b.txt", "c.txt"} {
		got, err := os.ReadFile(filepath.Join(f.root, rel))
		if err != nil || string(got) != "new "+rel {
			t.Errorf("%s = %q, %v; want %q", rel, got, err, "new "+rel)
		}
	}
	if got, err := os.ReadFile(filepath.Join(other, "b.txt")); err != nil || string(got) != "new bind/b.txt" {
		t.Errorf("the bind mount's source holds %q, %v", got, err)
	}

	// A barrier whose sync fails commits nothing, wherever the file is.
	f.ws.syncFS = func(*os.File) error { return os.ErrDeadlineExceeded }
	b2 := f.ws.openBarrier()
	defer b2.Close()
	staged = staged[:0]
	for _, rel := range []string{"tmp/a.txt", "bind/b.txt"} {
		s, err := f.ws.StageFor(b2, rel, "8", strings.NewReader("newer"), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, s)
	}
	if err := b2.Sync(); err == nil {
		t.Fatal("Sync with the failing syncfs succeeded")
	}
	for _, s := range staged {
		if err := f.ws.Commit(s); err == nil {
			t.Errorf("Commit of %s after a failed barrier succeeded", s.Rel)
		}
	}
	for _, rel := range []string{"tmp/a.txt", "bind/b.txt"} {
		if got, _ := os.ReadFile(filepath.Join(f.root, rel)); string(got) != "new "+rel {
			t.Errorf("%s = %q after the failed barrier, want it unchanged", rel, got)
		}
		if names := dirNames(t, filepath.Join(f.root, filepath.Dir(rel))); strings.Contains(names, ".ckpt-") {
			t.Errorf("%s's directory keeps a temp file: %s", rel, names)
		}
	}
}

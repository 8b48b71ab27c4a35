//go:build unix

package controller_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// withUmask runs fn with the process umask set to mask. Umask is process
// wide: no test of this package runs in parallel.
func withUmask(mask int, fn func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	fn()
}

// useStore opens a session in store, records a capture and a rewind (so
// both databases have written their -wal and -shm files), and checks
// the store's warning.
// The store's sessions directory is 0700 at once; each session's own
// directory and files are tightened when it is opened.
func useStore(t *testing.T, store, ws, session, fork string) string {
	t.Helper()
	ctx := context.Background()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: session, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.BeginTurn(ctx, "t", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{"a.txt"}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{"blobs/blobs.db", "sessions/" + session + "/index.db"} {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			// While the databases are open: -wal and -shm may go at close.
			fi, err := os.Stat(filepath.Join(store, db+suffix))
			if err != nil {
				t.Fatalf("%s%s was not made: %v", db, suffix, err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s%s: mode %04o, want 0600", db, suffix, fi.Mode().Perm())
			}
		}
	}
	if _, err := c.Fork(ctx, 0, controller.ForkOptions{To: fork, Restore: false}); err != nil {
		t.Fatal(err)
	}
	return controller.StoreOf(c).Warning()
}

// checkPrivate fails for every directory under store (the root aside) not
// 0700 and every file not 0600.
func checkPrivate(t *testing.T, store string) {
	t.Helper()
	n := 0
	filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if p == store {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := fs.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %04o, want %04o", strings.TrimPrefix(p, store), fi.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if n < 10 {
		t.Fatalf("only %d entries in the store", n)
	}
}

func TestStorePrivateUnderUmask000(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	var warning string
	withUmask(0, func() { warning = useStore(t, store, t.TempDir(), "s1", "f1") })
	checkPrivate(t, store)
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("store root: %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	if warning != "" {
		t.Errorf("warning %q for a private store", warning)
	}
}

// A store that already exists with looser modes (an older ckpt, a copy,
// a hand-made directory) is tightened on open, its directory too when it
// holds only ckpt's entries.
func TestStoreTightenedWhenLoose(t *testing.T) {
	for _, foreign := range []bool{false, true} {
		t.Run(map[bool]string{false: "own", true: "shared"}[foreign], func(t *testing.T) {
			testStoreTightened(t, foreign)
		})
	}
}

// testStoreTightened loosens every mode of a used store and opens it again.
// With foreign, the store directory also holds a file that is not ckpt's:
// then it is left alone and warned about, since ckpt may not have made it.
func testStoreTightened(t *testing.T, foreign bool) {
	store := filepath.Join(t.TempDir(), "store")
	ws := t.TempDir()
	withUmask(0, func() {
		useStore(t, store, ws, "s1", "f1")
		if foreign {
			if err := os.WriteFile(filepath.Join(store, "notes.txt"), nil, 0o666); err != nil {
				t.Fatal(err)
			}
		}
		filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			mode := fs.FileMode(0o666)
			if d.IsDir() {
				mode = 0o777
			}
			return os.Chmod(p, mode)
		})
		warning := useStore(t, store, ws, "s1", "f2")
		useStore(t, store, ws, "f1", "f3") // each session is tightened as it is opened
		if foreign && (!strings.Contains(warning, "readable by other users") || !strings.Contains(warning, store)) {
			t.Errorf("warning = %q, want one naming the store readable by others", warning)
		}
		if !foreign && warning != "" {
			t.Errorf("warning %q for a store directory ckpt tightened", warning)
		}
	})
	if foreign {
		os.Remove(filepath.Join(store, "notes.txt"))
	}
	checkPrivate(t, store)
	want := fs.FileMode(0o700)
	if foreign {
		want = 0o777
	}
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != want {
		t.Errorf("store root: %v, %v; want %04o", fi.Mode().Perm(), err, want)
	}
}

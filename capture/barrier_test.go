package capture

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A file staged with a barrier is committed only once the barrier has
// synced: Commit refuses it before (and removes the temp file), and after
// Sync it lands with its bytes and mode.
func TestBarrierCommitsOnlyAfterSync(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("syncfs is Linux's")
	}
	f := newFixture(t)
	b := f.ws.openBarrier()
	defer b.Close()
	f.write(t, "a.txt", "old", 0o644)

	s, err := f.ws.StageFor(b, "a.txt", "7", strings.NewReader("new"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ws.Commit(s); err == nil || !strings.Contains(err.Error(), "not synced") {
		t.Fatalf("Commit before the barrier synced = %v, want a refusal", err)
	}
	if got := dirNames(t, f.root); got != "a.txt" {
		t.Fatalf("after the refused commit the directory holds %q, want only a.txt", got)
	}

	s, err = f.ws.StageFor(b, "a.txt", "7", strings.NewReader("new"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := f.ws.StageFor(b, "sub/b.txt", "7", strings.NewReader("b"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Staged{s, s2} {
		if err := f.ws.Commit(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		rel, want string
		mode      os.FileMode
	}{{"a.txt", "new", 0o755}, {"sub/b.txt", "b", 0o600}} {
		p := filepath.Join(f.root, filepath.FromSlash(c.rel))
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want || fi.Mode().Perm() != c.mode {
			t.Fatalf("%s = %q mode %v, want %q %v", c.rel, got, fi.Mode().Perm(), c.want, c.mode)
		}
	}
	if got := dirNames(t, f.root); got != "a.txt sub" {
		t.Fatalf("after the commits the root holds %q, want \"a.txt sub\" (no temp file)", got)
	}
}

func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return strings.Join(out, " ")
}

// When the barrier's sync fails (a write-back error on the file system),
// none of its staged files can be committed: the target keeps its old
// bytes and the temp file is removed.
func TestBarrierSyncFailureCommitsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.ws.syncFS = func(*os.File) error { return errors.New("injected write-back error") }
	b := f.ws.openBarrier()
	defer b.Close()
	f.write(t, "a.txt", "old", 0o644)
	s, err := f.ws.StageFor(b, "a.txt", "7", strings.NewReader("new"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Sync = %v, want the injected error", err)
	}
	if err := f.ws.Commit(s); err == nil {
		t.Fatal("Commit after a failed barrier succeeded, want a refusal")
	}
	if got, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(got) != "old" {
		t.Fatalf("a.txt = %q, want \"old\"", got)
	}
	if got := dirNames(t, f.root); got != "a.txt" {
		t.Fatalf("the directory holds %q, want only a.txt", got)
	}
}

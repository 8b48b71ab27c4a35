package capture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file StageUnsynced wrote is committed only after SyncStaged: Commit
// refuses it before (and discards it), and after the sync it lands with
// its bytes and mode. Discard of an unsynced file leaves nothing behind.
func TestStageUnsyncedNeedsSync(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.write(t, "a.txt", "old", 0o644)
	names := func() []string {
		ents, err := os.ReadDir(f.root)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}

	s, err := f.ws.StageUnsynced("a.txt", "9", strings.NewReader("new"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ws.Commit(s); err == nil || !strings.Contains(err.Error(), "not synced") {
		t.Fatalf("Commit of an unsynced staged file = %v, want a refusal", err)
	}
	if got, want := strings.Join(names(), " "), "a.txt"; got != want {
		t.Fatalf("after the refused commit the directory holds %q, want %q (temp file gone)", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "old" {
		t.Fatalf("a.txt = %q after a refused commit, want it untouched", b)
	}

	s, err = f.ws.StageUnsynced("a.txt", "9", strings.NewReader("new"), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ws.SyncStaged(&s); err != nil {
		t.Fatal(err)
	}
	if err := f.ws.SyncStaged(&s); err != nil {
		t.Fatalf("a second SyncStaged = %v, want a no-op", err)
	}
	if err := f.ws.Commit(s); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(f.root, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "new" || fi.Mode().Perm() != 0o755 {
		t.Fatalf("a.txt = %q mode %v, want \"new\" 0755", b, fi.Mode().Perm())
	}

	s, err = f.ws.StageUnsynced("b.txt", "9", strings.NewReader("b"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.ws.Discard(s)
	if got, want := strings.Join(names(), " "), "a.txt"; got != want {
		t.Fatalf("after Discard the directory holds %q, want %q", got, want)
	}
}

package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/internal/atomicfile"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "settings.json")
	for _, tc := range []struct {
		data string
		perm os.FileMode
	}{{"first\n", 0o600}, {"second, longer\n", 0o644}, {"", 0o600}} {
		if err := atomicfile.WriteFile(p, []byte(tc.data), tc.perm); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.data || fi.Mode().Perm() != tc.perm {
			t.Errorf("got %q %v, want %q %v", b, fi.Mode().Perm(), tc.data, tc.perm)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries after the writes, want only the file (no temp left)", len(ents))
	}
}

// TestWriteFileFailureLeavesOld: when the rename cannot happen (the path
// is a directory) the old entry is untouched and no temp file is left.
func TestWriteFileFailureLeavesOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "x")
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "keep"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(p, []byte("new"), 0o600); err == nil {
		t.Fatal("writing over a non-empty directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || !ents[0].IsDir() {
		t.Errorf("entries after a failed write: %v, want the directory alone", ents)
	}
}

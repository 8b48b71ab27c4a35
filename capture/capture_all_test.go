package capture

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
)

// CaptureAll records what Capture would, path by path: good paths are
// captured, a refused one records nothing and does not stop the rest, a
// path given twice is recorded once, and one captured before is "already".
func TestCaptureAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "a.txt", "alpha\r\n", 0o644)
	f.write(t, "bin/run.sh", "#!/bin/sh\n", 0o755)
	f.write(t, "before.txt", "captured earlier", 0o600)
	if _, err := f.c.Capture(ctx, "before.txt"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.root, "before.txt"), []byte("changed since"), 0o600)
	paths := []string{"a.txt", "../outside", "bin/run.sh", "new/file.go", filepath.Join(f.root, "a.txt"), "before.txt", ".git/config"}
	res, errs := f.c.CaptureAll(ctx, paths)
	wantErr := []error{nil, ErrOutsideWorkspace, nil, nil, nil, nil, ErrVCSDir}
	wantRecorded := []bool{true, false, true, true, false, false, false}
	for i := range paths {
		if (errs[i] == nil) != (wantErr[i] == nil) || (wantErr[i] != nil && !errors.Is(errs[i], wantErr[i])) {
			t.Errorf("%s: error %v, want %v", paths[i], errs[i], wantErr[i])
		}
		if res[i].Recorded != wantRecorded[i] {
			t.Errorf("%s: recorded %v, want %v", paths[i], res[i].Recorded, wantRecorded[i])
		}
	}
	got := map[string]checkpoints.FileSnap{}
	for _, s := range f.snaps(t) {
		got[s.Path] = s
	}
	if len(got) != 4 {
		t.Fatalf("turn has %d snaps %v, want a.txt, bin/run.sh, new/file.go, before.txt", len(got), got)
	}
	for path, want := range map[string]string{"a.txt": "alpha\r\n", "bin/run.sh": "#!/bin/sh\n", "before.txt": "captured earlier"} {
		s, ok := got[path]
		if !ok || s.Content == nil {
			t.Fatalf("%s: snap %+v, want content", path, s)
		}
		rc, err := f.c.store.Open(ctx, *s.Content)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(b) != want {
			t.Errorf("%s: stored %q (%v), want %q", path, b, err, want)
		}
	}
	if got["bin/run.sh"].Mode != 0o755 {
		t.Errorf("bin/run.sh mode %v, want 0755", got["bin/run.sh"].Mode)
	}
	if s := got["new/file.go"]; s.Content != nil {
		t.Errorf("new/file.go: content %v, want none (created in the turn)", s.Content)
	}
}

// With no open turn, every path fails with ErrNoOpenTurn and nothing is
// stored in the index.
func TestCaptureAllNoTurn(t *testing.T) {
	t.Parallel()
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
	defer idx.Close()
	os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644)
	_, errs := New(ws, idx, cas.NewMemory()).CaptureAll(ctx, []string{"a", "b"})
	for i, err := range errs {
		if !errors.Is(err, checkpoints.ErrNoOpenTurn) {
			t.Errorf("path %d: %v, want ErrNoOpenTurn", i, err)
		}
	}
}

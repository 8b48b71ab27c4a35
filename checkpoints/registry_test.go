package checkpoints_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// A session the store has had is never made anew: whatever is left of its
// index (nothing, an empty file, a few bytes) stays as it is, and opening
// it fails with ErrNoIndex even where a new session would be created.
func TestOpenSessionNeverRemakesALostIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		lose func(dir string) error
		left int64 // the index file's size afterwards; -1: none
	}{
		{"deleted", func(dir string) error { return os.Remove(filepath.Join(dir, checkpoints.FileName)) }, -1},
		{"emptied", func(dir string) error { return os.Truncate(filepath.Join(dir, checkpoints.FileName), 0) }, 0},
		{"truncated", func(dir string) error { return os.Truncate(filepath.Join(dir, checkpoints.FileName), 50) }, 50},
		{"directory gone", os.RemoveAll, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			x, err := checkpoints.OpenSession(ctx, store, "s", true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.BeginTurn(ctx, "p", nil, nil); err != nil {
				t.Fatal(err)
			}
			x.Close()
			dir := checkpoints.SessionDir(store, "s")
			if err := tc.lose(dir); err != nil {
				t.Fatal(err)
			}
			for _, create := range []bool{true, false} {
				if _, err := checkpoints.OpenSession(ctx, store, "s", create); !errors.Is(err, checkpoints.ErrNoIndex) {
					t.Errorf("open (create %v): %v, want ErrNoIndex", create, err)
				}
			}
			fi, err := os.Stat(filepath.Join(dir, checkpoints.FileName))
			switch {
			case tc.left < 0 && err == nil:
				t.Errorf("an index.db of %d bytes was made in place of the lost one", fi.Size())
			case tc.left >= 0 && (err != nil || fi.Size() != tc.left):
				t.Errorf("the index.db left is now %v, %v; want it untouched (%d bytes)", fi, err, tc.left)
			}
			if has, err := checkpoints.HasSession(store, "s"); !has || err != nil {
				t.Errorf("HasSession = %v, %v; want the store to know it", has, err)
			}
			// Unregistered on purpose (a removal), the id is free again.
			if err := checkpoints.Unregister(store, "s"); err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(dir)
			x, err = checkpoints.OpenSession(ctx, store, "s", true)
			if err != nil {
				t.Fatalf("open after removal: %v", err)
			}
			x.Close()
		})
	}
}

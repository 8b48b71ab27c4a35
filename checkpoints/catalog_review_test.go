package checkpoints_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
)

// hasRef reports whether summary s names the blob of content p (see id).
func hasRef(s checkpoints.Summary, p string) bool {
	for _, b := range s.Refs {
		if b == *id(p) {
			return true
		}
	}
	return false
}

// A session whose index.db is a symbolic link: a write through the link's
// target changes none of the link's own stat fields, so a summary vouched
// for by them would hide the new turn's blob from the mark. The catalog
// must read such an index every time.
func TestCatalogReadsSymlinkedIndex(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	real := filepath.Join(t.TempDir(), "real")
	x, err := checkpoints.Open(ctx, real)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.BeginTurn(ctx, "one", nil, nil); err != nil {
		t.Fatal(err)
	}
	x.Close()
	dir := checkpoints.SessionDir(store, "a")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, checkpoints.FileName), filepath.Join(dir, checkpoints.FileName)); err != nil {
		t.Fatal(err)
	}
	c := catalog(t, store, later)
	if got := sessions(t, c, store); got["a"].Active() != 1 {
		t.Fatalf("first listing: %d turns; want 1", got["a"].Active())
	}
	sessions(t, c, store)

	// A new turn capturing a new blob, written through the target.
	x, err = checkpoints.Open(ctx, real)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := x.BeginTurn(ctx, "two", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: "f", Content: id("two"), Size: 1}); err != nil {
		t.Fatal(err)
	}
	x.Close()
	got := sessions(t, c, store)
	if a := got["a"]; a.Active() != 2 || !hasRef(a, "two") {
		t.Errorf("after a write through the link's target: %d turns, refs %v (cached %d); want 2 turns naming the new blob", a.Active(), a.Refs, c.Cached)
	}
}

package retention_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// A session directory moved elsewhere and replaced by a symbolic link
// (sessions/a -> another disk) is still a session every command uses
// through the link. Collection must not take it for absent: either it
// reads its index, or it deletes nothing.
func TestCollectKeepsSymlinkedSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	a := newFixture(t, store, "a")
	a.write("f.txt", "a one")
	a.turn("one")
	a.edit("f.txt", "a two")
	a.c.Close()
	b := newFixture(t, store, "b")
	b.write("g.txt", "b one")
	b.turn("one")
	b.edit("g.txt", "b two")
	b.c.Close()

	dir := checkpoints.SessionDir(store, "a")
	moved := filepath.Join(t.TempDir(), "a")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, dir); err != nil {
		t.Fatal(err)
	}
	// The session is usable through the link.
	c, err := controller.Open(ctx, controller.Options{Workspace: a.ws, Store: store, Session: "a", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	turns, _, err := c.Checkpoints(ctx, controller.ListOptions{NoFiles: true})
	c.Close()
	if err != nil || len(turns) != 1 {
		t.Fatalf("session a through the link: %d turns, %v", len(turns), err)
	}

	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	rep, err := retention.Collect(ctx, store, blobs, retention.CollectOptions{})
	t.Logf("collect: %+v, %v", rep, err)
	for _, content := range []string{"a one", "b one"} {
		if !has(t, blobs, content) {
			t.Errorf("collection deleted %q, which a session references", content)
		}
	}
}

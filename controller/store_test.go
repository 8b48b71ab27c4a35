package controller_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// TestStoreSharesOneBlobStore: every session opened from one Store uses
// the Store's one blob-store handle, which stays open while any of them
// is, whatever the order of the closes, and closes with the last. Open
// alone gives its Controller a store of its own, closed with it.
func TestStoreSharesOneBlobStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := controller.OpenStore(dir)
	if _, err := os.Stat(dir + "/blobs"); !os.IsNotExist(err) {
		t.Fatalf("OpenStore touched the store: blobs/ %v", err)
	}
	var cs []*controller.Controller
	for range 3 {
		ws := t.TempDir()
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
		c, err := st.Open(ctx, controller.Options{Workspace: ws, NoAutoRetention: true})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs[1:] {
		if controller.BlobsOf(c) != controller.BlobsOf(cs[0]) {
			t.Fatal("two sessions of one Store opened the blob store twice")
		}
		if c.Store() != st {
			t.Fatal("Controller.Store is not the Store it was opened from")
		}
	}
	capture := func(c *controller.Controller) error {
		if _, err := c.BeginTurn(ctx, "t", controller.TurnOptions{}); err != nil {
			return err
		}
		_, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{"a.txt"}})
		return errs[0]
	}
	// The Store closes first, then the sessions one by one: each still
	// writes blobs until it closes.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if err := capture(c); err != nil {
			t.Fatalf("session %d after the Store closed: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := controller.BlobsOf(cs[0]).Has(ctx, [32]byte{}); err == nil {
		t.Error("the blob store is still open after the Store and all its sessions closed")
	}
	if _, err := st.Open(ctx, controller.Options{Workspace: t.TempDir()}); err == nil {
		t.Error("a closed Store opened a session")
	}

	// Open: a store of its own, which its Controller's Close closes.
	c, err := controller.Open(ctx, controller.Options{Workspace: t.TempDir(), Store: dir, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	if controller.BlobsOf(c) == controller.BlobsOf(cs[0]) {
		t.Fatal("Open reused a closed Store's blob store")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.BlobsOf(c).Has(ctx, [32]byte{}); err == nil {
		t.Error("Open's blob store is still open after its Controller closed")
	}
}

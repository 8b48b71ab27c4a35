package remote

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/remote/backend/dir"
)

// A store that synced before another machine's collection repacked a pack
// and, a margin later, deleted it, still records that its blobs are in
// that pack. Its next sync of a session naming one of those blobs must
// not reuse the deleted pack: the HEAD would name an object that is gone,
// and a pull of the session would lack the blob.
func TestSyncDoesNotReuseACollectedPack(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b, _ := dir.New(filepath.Join(root, "remote"))
	ctx, r, ws, store, old, files := repackFixture(t, b)
	start := time.Now()
	at := func(d time.Duration) GCOptions { return GCOptions{Now: func() time.Time { return start.Add(d) }} }
	g, err := Open(ctx, filepath.Join(root, "collector"), "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if rep, err := g.GC(ctx, at(0)); err != nil || len(rep.Repack.Packs) != 1 {
		t.Fatalf("repack: %+v %v", rep.Repack, err)
	}
	rep, err := g.GC(ctx, at(25*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	gone := false
	for _, k := range rep.Deleted {
		gone = gone || k == old
	}
	if !gone {
		t.Fatalf("the old pack was not collected: %+v", rep)
	}

	// Back on the writer's store: a new session names a blob that was in
	// the old pack, and is synced.
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "s3", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	c.BeginTurn(ctx, "t", controller.TurnOptions{})
	for _, p := range paths[5:] {
		if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	c.Close()
	if _, err := r.Sync(ctx, []string{"s3"}, true); err != nil {
		t.Fatal(err)
	}
	h, _, err := r.ReadHead(ctx, "s3")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range h.Packs {
		if _, err := b.Stat(ctx, p.Key); err != nil {
			t.Errorf("s3's HEAD names pack %s: %v", p.Key, err)
		}
	}
	fresh, err := Open(ctx, filepath.Join(root, "fresh"), "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.Pull(context.Background(), PullOptions{Session: "s3", As: "s3"}); err != nil {
		t.Errorf("pull of s3 into a fresh store: %v", err)
	}
}

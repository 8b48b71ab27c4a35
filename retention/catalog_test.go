package retention_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// countCached lists the store's sessions through a fresh catalog and
// returns how many summaries it took from its rows.
func countCached(t testing.TB, store string) int {
	t.Helper()
	ctx := context.Background()
	c, err := checkpoints.OpenCatalog(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Sessions(ctx, func(ctx context.Context, id string) (*checkpoints.Index, error) {
		return retention.OpenSession(ctx, store, id)
	}); err != nil {
		t.Fatal(err)
	}
	return c.Cached
}

// With the catalog vouching for every session, verify finds a summary that
// disagrees with its index, and collection still keeps every blob a
// session references after it changed: the changed index is read again,
// whether its process still holds it open or not.
func TestCatalogVerifyAndCollectAfterChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := t.TempDir()
	fs := map[string]*fixture{}
	for _, id := range []string{"a", "b"} {
		f := newFixture(t, store, id)
		f.write("f.txt", id+" one")
		f.turn("one")
		f.edit("f.txt", id+" two")
		f.c.Close()
		fs[id] = f
	}
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(store))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	if _, err := retention.Collect(ctx, store, blobs, retention.CollectOptions{}); err != nil {
		t.Fatal(err)
	}
	// The catalog trusts no index written in the last few seconds.
	time.Sleep(3500 * time.Millisecond)
	countCached(t, store)
	if n := countCached(t, store); n != 2 {
		t.Fatalf("catalog vouches for %d sessions; want 2", n)
	}

	// b's row made to say what a's says: verify reports and rewrites it.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(store, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`UPDATE sessions SET data = (SELECT data FROM sessions WHERE id = 'a') WHERE id = 'b'`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := retention.Verify(ctx, store, blobs, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Catalog, []string{"b"}) || rep.OK() {
		t.Errorf("verify: catalog findings %v, ok %v; want [b], false", rep.Catalog, rep.OK())
	}
	if rep, err = retention.Verify(ctx, store, blobs, false, nil, nil); err != nil || len(rep.Catalog) != 0 || !rep.OK() {
		t.Errorf("verify after the rewrite: catalog findings %v, ok %v, %v; want none", rep.Catalog, rep.OK(), err)
	}

	// a captures new content and stays open (its commits in the WAL);
	// a blob nobody references is put.
	a := fs["a"]
	c, err := controller.Open(ctx, controller.Options{Workspace: a.ws, Store: store, Session: "a", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a.c = c
	a.turn("two")
	a.edit("f.txt", "a three")
	if _, _, err := blobs.Put(ctx, bytesReader("nobody's")); err != nil {
		t.Fatal(err)
	}
	if _, err := retention.Collect(ctx, store, blobs, retention.CollectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"a one", "a two", "b one"} {
		if !has(t, blobs, content) {
			t.Errorf("collection deleted %q, which a session references", content)
		}
	}
	if has(t, blobs, "nobody's") {
		t.Errorf("collection kept a blob nothing references")
	}
	// Closed again, a's index is read again all the same.
	c.Close()
	if _, err := retention.Collect(ctx, store, blobs, retention.CollectOptions{}); err != nil {
		t.Fatal(err)
	}
	if !has(t, blobs, "a two") {
		t.Errorf("collection after close deleted a's latest capture")
	}
}

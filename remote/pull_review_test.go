package remote

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/ckpt/ckpt/remote/backend/dir"
	"github.com/ckpt/ckpt/retention"
)

// gcMidPull runs a collection of store when the pull reads its third
// pack object (the second pack's trailer): the first pack's blobs are in
// the store by then, and no session references them yet.
type gcMidPull struct {
	backend.Backend
	mu      sync.Mutex
	gets    int
	collect func()
}

func (g *gcMidPull) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	g.mu.Lock()
	if strings.HasPrefix(key, "packs/") {
		g.gets++
		if g.gets == 3 && g.collect != nil {
			g.collect()
		}
	}
	g.mu.Unlock()
	return g.Backend.Get(ctx, key, off, n)
}

// A collection running while a pull fetches blobs must not delete them:
// the pull holds the store (as a capture does) from its first fetched
// blob until the pulled index is in place. Else the pull fails claiming
// the remote is corrupt, or, a moment later, installs an index naming
// deleted blobs.
func TestPullHoldsItsBlobsAgainstGC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	d, _ := dir.New(filepath.Join(root, "remote"))
	g := &gcMidPull{Backend: d}
	ws, store := filepath.Join(root, "ws"), filepath.Join(root, "A")
	os.MkdirAll(ws, 0o755)
	capture := func(store, sess string, files ...string) {
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: sess, NoAutoRetention: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.BeginTurn(ctx, "t", controller.TurnOptions{})
		for _, f := range files {
			p := filepath.Join(ws, f)
			os.WriteFile(p, []byte(strings.Repeat(f+" body\n", 50)), 0o644)
			if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
				t.Fatal(errs[0])
			}
		}
	}
	r, err := Open(ctx, store, "file://test", g)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	capture(store, "s1", "a.txt", "b.txt")
	if _, err := r.Sync(ctx, []string{"s1"}, true); err != nil {
		t.Fatal(err)
	}
	capture(store, "s2", "a.txt", "b.txt", "c.txt", "d.txt")
	if _, err := r.Sync(ctx, []string{"s2"}, true); err != nil {
		t.Fatal(err)
	}
	if h, _, err := r.ReadHead(ctx, "s2"); err != nil || len(h.Packs) != 2 {
		t.Fatalf("s2 should name two packs: %+v %v", h.Packs, err)
	}

	// Another store, with a session of its own, pulls s2; its gc runs
	// meanwhile.
	other := filepath.Join(root, "B")
	capture(other, "own", "e.txt")
	rb, err := Open(ctx, other, "file://test", g)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	blobs, err := cas.OpenDisk(ctx, checkpoints.BlobDir(other))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	collected := make(chan error, 1)
	g.collect = func() {
		go func() {
			_, err := retention.Collect(ctx, other, blobs, retention.CollectOptions{})
			collected <- err
		}()
		// Let the collection finish, unless the pull's hold keeps it
		// waiting.
		select {
		case err := <-collected:
			collected <- err
		case <-time.After(2 * time.Second):
		}
	}
	if _, err := rb.Pull(ctx, PullOptions{Session: "s2", As: "s2"}); err != nil {
		t.Errorf("pull with a collection running: %v", err)
	}
	if err := <-collected; err != nil {
		t.Fatal(err)
	}
	rep, err := retention.Verify(ctx, other, blobs, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("after the pull and the collection, verify: %+v", rep)
	}
}

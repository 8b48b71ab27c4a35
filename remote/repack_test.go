package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cas"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/remote/backend"
	"github.com/ckpt/ckpt/remote/backend/dir"
)

// repackFixture: session s1 uploads ten blobs in one pack; s2, synced
// after it from the same store, references two of them and so names that
// pack; then s1 leaves the remote. The pack is 80% dead.
func repackFixture(t *testing.T, b backend.Backend) (ctx context.Context, r *Remote, ws, store, pack string, files map[string][]byte) {
	t.Helper()
	ctx = context.Background()
	root := t.TempDir()
	ws, store = filepath.Join(root, "ws"), filepath.Join(root, "A")
	os.MkdirAll(ws, 0o755)
	files = map[string][]byte{}
	var all []string
	for i := 0; i < 10; i++ {
		p := filepath.Join(ws, fmt.Sprintf("f%d.txt", i))
		body := []byte(strings.Repeat(fmt.Sprintf("file %d, a line of source-like text %d\n", i, i*i), 60))
		os.WriteFile(p, body, 0o644)
		files[p] = body
		all = append(all, p)
	}
	capture := func(sess string, paths ...string) {
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: sess, NoAutoRetention: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.BeginTurn(ctx, "t", controller.TurnOptions{})
		for _, p := range paths {
			if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{p}}); errs[0] != nil {
				t.Fatal(errs[0])
			}
		}
	}
	r, err := Open(ctx, store, "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	capture("s1", all...)
	if _, err := r.Sync(ctx, []string{"s1"}, true); err != nil {
		t.Fatal(err)
	}
	capture("s2", all[:2]...)
	if _, err := r.Sync(ctx, []string{"s2"}, true); err != nil {
		t.Fatal(err)
	}
	h2, _, err := r.ReadHead(ctx, "s2")
	if err != nil || len(h2.Packs) != 1 || h2.Packs[0].Entries != 10 {
		t.Fatalf("s2 should name s1's pack of 10: %+v %v", h2.Packs, err)
	}
	if err := b.Delete(ctx, headKey("s1")); err != nil {
		t.Fatal(err)
	}
	return ctx, r, ws, store, h2.Packs[0].Key, files
}

// TestRepack: a collection repacks a mostly-dead pack: the live blobs move
// to a new pack, the HEAD names it, the old pack is collected after the
// margin, pulls and verify work throughout, and the session's own writer
// syncs on without forking.
func TestRepack(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b, _ := dir.New(filepath.Join(root, "remote"))
	ctx, r, ws, store, old, files := repackFixture(t, b)
	start := time.Now()
	at := func(d time.Duration) GCOptions { return GCOptions{Now: func() time.Time { return start.Add(d) }} }
	// The collector runs on another machine: the writer learns the new
	// pack from the remote, not from its own records.
	g, err := Open(ctx, filepath.Join(root, "collector"), "file://test", b)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	before, _, _ := r.readHead(ctx, "s2")
	rep, err := g.GC(ctx, at(0).withDryRun())
	if err != nil || !slices.Equal(rep.Repack.Packs, []string{old}) || len(rep.Repack.NewPacks) != 0 || rep.Repack.DeadBytes <= 3*rep.Repack.LiveBytes {
		t.Fatalf("dry run: %+v %v", rep.Repack, err)
	}
	if after, _, _ := r.readHead(ctx, "s2"); !bytes.Equal(before, after) {
		t.Fatal("a dry run rewrote HEAD")
	}

	rep, err = g.GC(ctx, at(0))
	if err != nil || !slices.Equal(rep.Repack.Packs, []string{old}) || len(rep.Repack.NewPacks) != 1 || rep.Repack.Sessions != 1 {
		t.Fatalf("repack: %+v %v", rep.Repack, err)
	}
	h2, etag, err := r.ReadHead(ctx, "s2")
	if err != nil || len(h2.Packs) != 1 || h2.Packs[0].Key != rep.Repack.NewPacks[0] || h2.Packs[0].Entries != 2 || h2.RepackedFrom == "" {
		t.Fatalf("HEAD after the repack: %+v %v", h2, err)
	}
	if len(rep.Deleted) != 0 {
		t.Fatalf("deleted within the margin: %v", rep.Deleted)
	}
	if v, err := r.Verify(ctx, nil); err != nil || !v.OK() {
		t.Fatalf("verify after the repack: %+v %v", v, err)
	}
	pullCheck := func(name string) {
		t.Helper()
		rb, err := Open(ctx, filepath.Join(root, name), "file://test", b)
		if err != nil {
			t.Fatal(err)
		}
		defer rb.Close()
		if _, err := rb.Pull(ctx, PullOptions{Session: "s2", As: "s2"}); err != nil {
			t.Fatalf("pull into %s: %v", name, err)
		}
		n := 0
		for p, body := range files {
			got, err := rb.blobs.Get(ctx, cas.Sum(body))
			if errors.Is(err, cas.ErrNotFound) {
				continue
			}
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("%s in %s: %v", p, name, err)
			}
			n++
		}
		if n != 2 {
			t.Fatalf("pull into %s fetched %d of s2's 2 blobs", name, n)
		}
	}
	pullCheck("B")

	// The session's writer syncs a new turn: no fork, and it does not name
	// the old pack again.
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Store: store, Session: "s2", NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	c.BeginTurn(ctx, "after the repack", controller.TurnOptions{})
	f := filepath.Join(ws, "new.txt")
	os.WriteFile(f, []byte("new\n"), 0o644)
	if _, errs := c.Capture(ctx, controller.CaptureOptions{Paths: []string{f}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	c.Close()
	res, err := r.Sync(ctx, []string{"s2"}, true)
	if err != nil || res[0].Status != "uploaded" || res[0].RemoteSession != "s2" {
		t.Fatalf("sync after the repack: %+v %v", res, err)
	}
	h2, etag2, err := r.ReadHead(ctx, "s2")
	if err != nil || etag2 == etag || h2.RepackedFrom != "" {
		t.Fatalf("HEAD after the writer's sync: %+v %v", h2, err)
	}
	for _, p := range h2.Packs {
		if p.Key == old {
			t.Fatalf("the writer named the repacked pack again: %+v", h2.Packs)
		}
	}
	if res[0].Blobs != 1 {
		t.Fatalf("the writer uploaded %d blobs, want only the new one", res[0].Blobs)
	}

	// Past the margin the old pack goes; everything still pulls.
	rep, err = g.GC(ctx, at(25*time.Hour))
	if err != nil || !slices.Contains(rep.Deleted, old) {
		t.Fatalf("past the margin: %+v %v", rep, err)
	}
	if v, err := r.Verify(ctx, nil); err != nil || !v.OK() {
		t.Fatalf("verify after collecting: %+v %v", v, err)
	}
	pullCheck("C")
}

// headRacer is a backend on which another writer replaces a HEAD just
// before the first conditional write to it.
type headRacer struct {
	backend.Backend
	key  string
	done bool
}

func (h *headRacer) Put(ctx context.Context, key string, r io.Reader, size int64, cond backend.PutCond) (string, error) {
	if key == h.key && cond.IfMatch != "" && !h.done {
		h.done = true
		cur, err := h.Backend.Get(ctx, key, 0, -1)
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(cur)
		cur.Close()
		body = append(body, '\n') // the same HEAD, written again: a new ETag
		if _, err := h.Backend.Put(ctx, key, bytes.NewReader(body), int64(len(body)), backend.PutCond{}); err != nil {
			return "", err
		}
	}
	return h.Backend.Put(ctx, key, r, size, cond)
}

// TestRepackLosesRace: a HEAD that changes while a repack runs is left
// alone; it still names the old pack, which is then never collected.
func TestRepackLosesRace(t *testing.T) {
	t.Parallel()
	d, _ := dir.New(filepath.Join(t.TempDir(), "remote"))
	b := &headRacer{Backend: d, key: headKey("s2")}
	ctx, r, _, _, old, _ := repackFixture(t, b)
	start := time.Now()
	at := func(dd time.Duration) GCOptions { return GCOptions{Now: func() time.Time { return start.Add(dd) }} }
	rep, err := r.GC(ctx, at(0))
	if err != nil || !slices.Equal(rep.Repack.Skipped, []string{"s2"}) || rep.Repack.Sessions != 0 {
		t.Fatalf("repack against a moving HEAD: %+v %v", rep.Repack, err)
	}
	h2, _, err := r.ReadHead(ctx, "s2")
	if err != nil || len(h2.Packs) != 1 || h2.Packs[0].Key != old {
		t.Fatalf("HEAD after the lost race: %+v %v", h2.Packs, err)
	}
	rep, err = r.GC(ctx, at(25*time.Hour).withoutRepack())
	if err != nil || slices.Contains(rep.Deleted, old) {
		t.Fatalf("the pack a HEAD names was collected: %+v %v", rep, err)
	}
	if v, err := r.Verify(ctx, nil); err != nil || !v.OK() {
		t.Fatalf("verify: %+v %v", v, err)
	}
}

func (o GCOptions) withoutRepack() GCOptions { o.RepackBelow = -1; return o }

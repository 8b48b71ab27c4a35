//go:build unix

package checkpoints_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

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
	t.Parallel()
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

// TestCatalogRacesSettlingWriters: sessions rest for just over the
// catalog's margin, so their summaries become trusted, then commit a turn
// with a new blob at a random moment, opening and closing the index each
// time (so the WAL is gone again) or keeping it open; meanwhile catalogs
// list the sessions without pause on the real clock. Every listing
// started after a commit returned must name its blob: a summary the
// catalog vouches for is never older than the index. CKPT_CATALOG_RACE
// sets how long it runs (default 8s); past that it goes on, up to two
// minutes more, until the catalog has vouched for a summary at least
// once: on a loaded machine a listing can take longer than the second a
// resting session stays trusted, and so miss every window.
func TestCatalogRacesSettlingWriters(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	run := 8 * time.Second
	if v := os.Getenv("CKPT_CATALOG_RACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		run = d
	}
	ctx := context.Background()
	store := t.TempDir()
	const writers = 6
	type commit struct {
		session, content string
	}
	var mu sync.Mutex
	var done []commit // commits that have returned, in order
	for w := 0; w < writers; w++ {
		storeSession(t, store, fmt.Sprintf("s%d", w), fmt.Sprintf("s%d first", w))
	}
	listings, cached := 0, 0
	deadline, giveUp := time.Now().Add(run), time.Now().Add(run+2*time.Minute)
	running := func() bool {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		return now.Before(deadline) || (cached == 0 && now.Before(giveUp))
	}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("s%d", w)
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			var x *checkpoints.Index
			for n := 0; running(); n++ {
				time.Sleep(3*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
				if x == nil {
					var err error
					if x, err = checkpoints.Open(ctx, checkpoints.SessionDir(store, sid)); err != nil {
						t.Error(err)
						return
					}
				}
				content := fmt.Sprintf("%s turn %d", sid, n)
				cp, err := x.BeginTurn(ctx, content, nil, nil)
				if err == nil {
					_, err = x.AddSnap(ctx, cp.ID, checkpoints.FileSnap{Path: "f", Content: id(content), Size: 1})
				}
				if err != nil {
					t.Error(err)
					return
				}
				if rng.IntN(3) != 0 { // mostly closed again: the WAL goes
					x.Close()
					x = nil
				}
				mu.Lock()
				done = append(done, commit{sid, content})
				mu.Unlock()
			}
			if x != nil {
				x.Close()
			}
		}()
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := checkpoints.OpenCatalog(ctx, store)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for running() {
				mu.Lock()
				before := append([]commit(nil), done...)
				mu.Unlock()
				ss, err := c.Sessions(ctx, opener(store))
				if err != nil {
					t.Error(err)
					return
				}
				by := map[string]checkpoints.Summary{}
				for _, s := range ss {
					by[s.ID] = s
				}
				for _, cm := range before {
					if !hasRef(by[cm.session], cm.content) {
						t.Errorf("a listing started after %q was committed does not name its blob (catalog took %d summaries from its rows)", cm.content, c.Cached)
						return
					}
				}
				mu.Lock()
				listings++
				cached += c.Cached
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d commits, %d listings, %d summaries taken from the catalog", len(done), listings, cached)
	if cached == 0 {
		t.Errorf("the catalog never vouched for a summary: the race was not exercised")
	}
}

// An index replaced by another file that reuses its inode number (a
// delete then a create: file systems hand freed inode numbers out again
// at once), with the same size, on the real clock after the catalog
// vouched for it: the change time gives it away.
func TestCatalogSeesInodeReused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for the catalog's margin")
	}
	store := t.TempDir()
	storeSession(t, store, "a", "one")
	storeSession(t, store, "b", "two", "three")
	path := filepath.Join(checkpoints.SessionDir(store, "a"), checkpoints.FileName)
	other, err := os.ReadFile(filepath.Join(checkpoints.SessionDir(store, "b"), checkpoints.FileName))
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != len(other) {
		t.Skipf("the two indexes differ in size (%d, %d)", len(old), len(other))
	}
	time.Sleep(3200 * time.Millisecond)
	c := catalog(t, store, time.Now)
	sessions(t, c, store)
	if sessions(t, c, store); c.Cached != 2 {
		t.Fatalf("the catalog vouches for %d sessions; want 2", c.Cached)
	}
	fi, _ := os.Stat(path)
	before := fi.Sys().(*syscall.Stat_t).Ino
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, other, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(path)
	t.Logf("inode before %d, after %d", before, fi.Sys().(*syscall.Stat_t).Ino)
	got := sessions(t, c, store)
	if a := got["a"]; a.Workspace != "/ws/b" || !hasRef(a, "three") {
		t.Errorf("after the index was replaced: workspace %q, refs %v; want b's", a.Workspace, a.Refs)
	}
}

package controller_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// removeCatalog deletes the store's catalog, as OpenCatalog does with one
// it cannot read: a cache, whose loss must lose nothing.
func removeCatalog(t *testing.T, store string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(store, "catalog.db"+suffix)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestContinueRecordedInIndex: an agent session that continues a session
// is a row of that session's index, not a directory of the store: Resolve
// resolves it, even after the catalog is lost, listings never see it, and
// an empty session forgets it.
func TestContinueRecordedInIndex(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	const F = "fork-of-s"
	if err := st.Continue(ctx, F, S, "a1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(e.store, "sessions", F)); !os.IsNotExist(err) {
		t.Errorf("sessions/%s: %v, want nothing on disk for a continuation", F, err)
	}
	check := func(when string) {
		t.Helper()
		loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: F, Create: true})
		if err != nil || loc.Session != S || !loc.Continued || loc.ContinuedAt != "a1" || loc.ContinuedIn != S || !loc.OfSession {
			t.Errorf("%s: Resolve(%s) = %+v, %v; want session %s continued at a1 in %s", when, F, loc, err, S, S)
		}
	}
	check("recorded")
	// A fork of S copies S's index, but continues nothing S does.
	if _, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: "zz-fork"}); err != nil {
		t.Fatal(err)
	}
	removeCatalog(t, e.store)
	check("catalog lost")
	infos, err := st.Sessions(ctx, "")
	if err != nil || len(infos) != 2 || infos[0].ID != S || infos[1].ID != "zz-fork" {
		t.Errorf("Sessions = %+v, %v; want %s and its fork", infos, err, S)
	}
	if err := st.Continue(ctx, S, S, "", ""); !errors.Is(err, controller.ErrSessionExists) {
		t.Errorf("Continue of a session with an index: %v, want ErrSessionExists", err)
	}
	if err := st.Continue(ctx, F, "", "", ""); err != nil {
		t.Fatal(err)
	}
	for _, lost := range []bool{false, true} {
		if lost {
			removeCatalog(t, e.store)
		}
		if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: F, Create: true}); err != nil || loc.Session != F || loc.Continued {
			t.Errorf("forgotten (catalog lost: %v): Resolve = %+v, %v; want %s itself", lost, loc, err, F)
		}
	}
}

// TestContinueReadsOldLinkFiles: a store an older ckpt wrote keeps a
// forked conversation as a link directory (sessions/ID/claude-continues).
// It still resolves, and is recorded in the index of the session it names
// when first read: the index then proves it, with the link directory and
// the catalog gone. A link naming no session resolves to nothing.
func TestContinueReadsOldLinkFiles(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	link := func(id, content string) {
		dir := filepath.Join(e.store, "sessions", id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "claude-continues"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link("old-fork", S+"\na1\nsome-claude-session\n")
	link("old-fork-2", S+"\n")
	link("dangling", "no-such-session\na1\n")
	removeCatalog(t, e.store) // an older ckpt's catalog has no continuations
	st := controller.OpenStore(e.store)
	check := func(when string) {
		t.Helper()
		loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "old-fork", Create: true})
		if err != nil || loc.Session != S || loc.ContinuedAt != "a1" || loc.ContinuedIn != "some-claude-session" {
			t.Errorf("%s: Resolve(old-fork) = %+v, %v", when, loc, err)
		}
		loc, err = st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "old-fork-2", Create: true})
		if err != nil || loc.Session != S || loc.ContinuedAt != "" || loc.ContinuedIn != S {
			t.Errorf("%s: Resolve(old-fork-2) = %+v, %v", when, loc, err)
		}
		if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "dangling", Create: true}); err != nil || loc.Continued || loc.Session != "dangling" {
			t.Errorf("%s: Resolve(dangling) = %+v, %v; want itself", when, loc, err)
		}
	}
	check("link files")
	for _, id := range []string{"old-fork", "old-fork-2"} {
		if err := os.RemoveAll(filepath.Join(e.store, "sessions", id)); err != nil {
			t.Fatal(err)
		}
	}
	removeCatalog(t, e.store)
	check("from the index")
}

// pendingKey is the meta row a front-end marks a session to adopt with.
const pendingKey = "test.adopt"

// TestAdoptOnce: parallel callers adopt a session once. decide runs once,
// under the session's rewind lock; the session becomes a fork of the
// parent before the turn decide named, with its one prompt reopened, and
// the row is gone.
func TestAdoptOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	P := e.c.Session()
	st := controller.OpenStore(e.store)
	x, err := st.Open(ctx, controller.Options{Workspace: e.ws, Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.BeginTurn(ctx, "second, again", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := x.SetMeta(ctx, pendingKey, "p-3"); err != nil {
		t.Fatal(err)
	}
	x.Close()

	var calls, opened atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := st.Adopt(ctx, "x", pendingKey, func(v, ws string) (string, string, int) {
				calls.Add(1)
				if v != "p-3" || ws != e.c.WorkspaceRoot() {
					t.Errorf("decide(%q, %q)", v, ws)
				}
				return "", P, 1
			})
			if err != nil {
				t.Error(err)
			}
			if res.Opened {
				opened.Add(1)
				if res.Turn != 1 || res.Prompt != "second, again" {
					t.Errorf("reopened turn %d %q, want 1 \"second, again\"", res.Turn, res.Prompt)
				}
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 1 || opened.Load() != 1 {
		t.Fatalf("decide ran %d times, %d adoptions; want 1 and 1", calls.Load(), opened.Load())
	}
	x, err = st.Open(ctx, controller.Options{Workspace: e.ws, Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	cps, _, err := x.Checkpoints(ctx, controller.ListOptions{Since: -1, NoFiles: true})
	if err != nil || len(cps) != 2 || cps[0].Prompt != "first" || cps[1].Prompt != "second, again" {
		t.Errorf("adopted session: %+v, %v; want first, second again", cps, err)
	}
	if _, err := x.Meta(ctx, pendingKey); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("pending row after the adoption: %v, want ErrNotFound", err)
	}
	infos, err := st.Sessions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.ID == "x" && (in.Parent != P || in.ParentTurn != 1) {
			t.Errorf("adopted session's parent %s turn %d, want %s turn 1", in.Parent, in.ParentTurn, P)
		}
	}
}

// TestAdoptKeepsWork: a session that recorded anything is never replaced:
// the row goes, the session stays as it was. A row decide keeps is
// rewritten, and nothing else changes.
func TestAdoptKeepsWork(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	P := e.c.Session()
	st := controller.OpenStore(e.store)
	x, err := st.Open(ctx, controller.Options{Workspace: e.ws, Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.BeginTurn(ctx, "work", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := x.SetMeta(ctx, pendingKey, "try-0"); err != nil {
		t.Fatal(err)
	}
	x.Close()
	res, err := st.Adopt(ctx, "x", pendingKey, func(v, ws string) (string, string, int) { return "try-1", "", 0 })
	if err != nil || res.Opened {
		t.Fatalf("Adopt keeping the row: %+v, %v", res, err)
	}
	x, err = st.Open(ctx, controller.Options{Workspace: e.ws, Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := x.Meta(ctx, pendingKey); v != "try-1" || err != nil {
		t.Errorf("kept row %q, %v; want try-1", v, err)
	}
	e.write("w.txt", "w")
	if _, errs := x.Capture(ctx, controller.CaptureOptions{Paths: []string{"w.txt"}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	x.Close()
	res, err = st.Adopt(ctx, "x", pendingKey, func(v, ws string) (string, string, int) { return "", P, 1 })
	if err != nil || res.Opened {
		t.Fatalf("Adopt of a session with a capture: %+v, %v; want nothing done", res, err)
	}
	x, err = st.Open(ctx, controller.Options{Workspace: e.ws, Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	cps, _, err := x.Checkpoints(ctx, controller.ListOptions{Since: -1})
	if err != nil || len(cps) != 1 || cps[0].Prompt != "work" || len(cps[0].Files) != 1 {
		t.Errorf("session with work after Adopt: %+v, %v", cps, err)
	}
	if _, err := x.Meta(ctx, pendingKey); !errors.Is(err, controller.ErrNotFound) {
		t.Errorf("row after a refused adoption: %v, want ErrNotFound", err)
	}
}

package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
)

// TestContinuationAfterAnUnreadableIndex: a catalog built while the index
// holding a continuation could not be read must not answer "nothing
// continues it" once the index reads again: what an index could not say
// was never proven absent.
func TestContinuationAfterAnUnreadableIndex(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	const F = "fork-of-s"
	if err := st.Continue(ctx, F, S, "a1", ""); err != nil {
		t.Fatal(err)
	}
	e.c.Close()
	e.c = nil
	removeCatalog(t, e.store)
	file := filepath.Join(e.store, "sessions", S, "index.db")
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := make([]byte, len(good))
	for i := range bad {
		bad[i] = 0x5a
	}
	if err := os.WriteFile(file, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: F, Create: true}); err == nil && loc.Continued {
		t.Errorf("Resolve with the index unreadable = %+v; want it not continued (or an error)", loc)
	}
	if err := os.WriteFile(file, good, 0o600); err != nil {
		t.Fatal(err)
	}
	loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: F, Create: true})
	if err != nil || !loc.Continued || loc.Session != S || loc.ContinuedAt != "a1" {
		t.Errorf("Resolve once the index reads again = %+v, %v; want %s continued at a1", loc, err, S)
	}
}

// TestContinuationOfARemovedSession: a session removed with the agent
// session that continued it, then recreated under the same id (a
// workspace's default session id is its root's), continues nothing its
// index does not record: the catalog's row is no proof.
func TestContinuationOfARemovedSession(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	const F = "fork-of-s"
	if err := st.Continue(ctx, F, S, "a1", ""); err != nil {
		t.Fatal(err)
	}
	if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: F, Create: true}); err != nil || !loc.Continued {
		t.Fatalf("Resolve = %+v, %v", loc, err)
	}
	e.c.Close()
	e.c = nil
	if _, _, err := st.RemoveSession(ctx, S, true, false); err != nil {
		t.Fatal(err)
	}
	if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: F, Create: true}); err != nil || loc.Continued || loc.Session != F {
		t.Errorf("Resolve after removing %s = %+v, %v; want %s itself", S, loc, err, F)
	}
	e.reopen() // the workspace's default session again, new
	e.turn("new work")
	if e.c.Session() != S {
		t.Fatalf("recreated session %s, want %s", e.c.Session(), S)
	}
	if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: F, Create: true}); err != nil || loc.Continued || loc.Session != F {
		t.Errorf("Resolve after recreating %s = %+v, %v; want %s itself", S, loc, err, F)
	}
}

// TestContinuationOneAnswer: an agent session recorded as continuing one
// session, then another (or named by an older store's link file while an
// index records it elsewhere), resolves to the latest record, and a
// rebuilt catalog gives the same answer: the newer index row wins over the
// older record.
func TestContinuationOneAnswer(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	A := e.c.Session()
	if _, err := e.c.Fork(ctx, 2, controller.ForkOptions{To: "zz-b"}); err != nil {
		t.Fatal(err)
	}
	const B = "zz-b"
	st := controller.OpenStore(e.store)
	check := func(id, want, when string) {
		t.Helper()
		for _, lost := range []bool{false, true} {
			if lost {
				removeCatalog(t, e.store)
			}
			loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: id, Create: true})
			if err != nil || !loc.Continued || loc.Session != want {
				t.Errorf("%s (catalog lost: %v): Resolve(%s) = %+v, %v; want %s", when, lost, id, loc, err, want)
			}
		}
	}
	// Recorded twice, the second time elsewhere.
	if err := st.Continue(ctx, "f1", A, "a1", ""); err != nil {
		t.Fatal(err)
	}
	if err := st.Continue(ctx, "f1", B, "b1", ""); err != nil {
		t.Fatal(err)
	}
	check("f1", B, "recorded again")
	// An older ckpt's link file names A; this ckpt recorded B.
	dir := filepath.Join(e.store, "sessions", "f2")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "claude-continues"), []byte(A+"\na0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.Continue(ctx, "f2", B, "b2", ""); err != nil {
		t.Fatal(err)
	}
	removeCatalog(t, e.store)
	check("f2", B, "link file and index row")
}

// TestAdoptWhileTheSessionIsOpen: a hook that opened the session before
// another adopted it (a hook server's cached controller, a parallel tool
// call) and captures after the adoption must not record into an index
// that is no longer the session's: a capture reported recorded is in the
// session.
func TestAdoptWhileTheSessionIsOpen(t *testing.T) {
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
	if err := x.SetMeta(ctx, pendingKey, "p"); err != nil {
		t.Fatal(err)
	}
	other, err := st.Open(ctx, controller.Options{Workspace: e.ws, Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	x.Close()
	if _, err := st.Adopt(ctx, "x", pendingKey, func(v, ws string) (string, string, int) { return "", P, 1 }); err != nil && !errors.Is(err, checkpoints.ErrIndexInUse) {
		t.Fatal(err)
	}
	e.write("w.txt", "typed after the adoption")
	res, errs := other.Capture(ctx, controller.CaptureOptions{Paths: []string{"w.txt"}})
	if errs[0] != nil || !res[0].Recorded {
		return // refused: nothing claimed
	}
	y, err := st.Open(ctx, controller.Options{Workspace: e.ws, Session: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	cps, _, err := y.Checkpoints(ctx, controller.ListOptions{Since: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		for _, f := range cp.Files {
			if f.Path == "w.txt" {
				return
			}
		}
	}
	t.Errorf("capture of w.txt reported recorded in turn %d, but session x holds %+v", res[0].Turn, cps)
}

// TestContinueNeverShadowsALostSession: an id the store has had a session
// under, whose index is lost, is that session still: Continue refuses it,
// and Resolve does not send its events elsewhere.
func TestContinueNeverShadowsALostSession(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	l, err := st.Open(ctx, controller.Options{Workspace: e.ws, Session: "lost"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.BeginTurn(ctx, "p", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.Remove(filepath.Join(e.store, "sessions", "lost", "index.db")); err != nil {
		t.Fatal(err)
	}
	if err := st.Continue(ctx, "lost", S, "a1", ""); !errors.Is(err, controller.ErrSessionExists) {
		t.Errorf("Continue of a session whose index is lost: %v, want ErrSessionExists", err)
	}
	if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "lost", Create: true}); err == nil && loc.Continued {
		t.Errorf("Resolve(lost) = %+v; want the lost session itself (or its error)", loc)
	}
}

// TestContinueOldLinkInAStoreWithoutRegistry: an older store that has
// neither a registry nor continuations in its indexes: its link
// directories are not taken for sessions when the registry is made, and
// resolve.
func TestContinueOldLinkInAStoreWithoutRegistry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	e.c.Close()
	e.c = nil
	dir := filepath.Join(e.store, "sessions", "old-fork")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "claude-continues"), []byte(S+"\na1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(e.store, checkpoints.RegistryDir)); err != nil {
		t.Fatal(err)
	}
	removeCatalog(t, e.store)
	st := controller.OpenStore(e.store)
	loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "old-fork", Create: true})
	if err != nil || !loc.Continued || loc.Session != S || loc.ContinuedAt != "a1" {
		t.Errorf("Resolve(old-fork) = %+v, %v; want %s continued at a1", loc, err, S)
	}
	if has, _ := checkpoints.HasSession(e.store, "old-fork"); has {
		t.Error("the link directory was registered as a session")
	}
}

// TestContinueConcurrentWithCatalogLoss: agent sessions recorded as
// continuing one session in parallel (two Claude conversations forked
// from it), while lookups run and the catalog is deleted under them, all
// resolve afterwards, with the catalog kept and rebuilt.
func TestContinueConcurrentWithCatalogLoss(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	ids := []string{"f0", "f1", "f2", "f3", "f4", "f5"}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			// The catalog deleted under it may fail its note (the
			// index holds the row: it resolves all the same).
			if err := st.Continue(ctx, id, S, "a"+id, ""); err != nil && !strings.Contains(err.Error(), "catalog") {
				t.Errorf("Continue(%s): %v", id, err)
			}
		}()
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				for _, suffix := range []string{"", "-wal", "-shm"} {
					os.Remove(filepath.Join(e.store, "catalog.db"+suffix))
				}
			}
			if _, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: ids[(i+1)%len(ids)], Create: true}); err != nil {
				t.Errorf("Resolve: %v", err)
			}
		}()
	}
	wg.Wait()
	// After the storm a continuation records as ever.
	ids = append(ids, "f6")
	if err := st.Continue(ctx, "f6", S, "af6", ""); err != nil {
		t.Errorf("Continue after the catalog was deleted in use: %v", err)
	}
	for _, lost := range []bool{false, true} {
		if lost {
			removeCatalog(t, e.store)
		}
		for _, id := range ids {
			loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: id, Create: true})
			if err != nil || !loc.Continued || loc.Session != S || loc.ContinuedAt != "a"+id {
				t.Errorf("catalog lost %v: Resolve(%s) = %+v, %v", lost, id, loc, err)
			}
		}
	}
}

// TestContinueCorruptCatalog: a catalog overwritten with garbage is not
// taken for "nothing continues it".
func TestContinueCorruptCatalog(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	if err := st.Continue(ctx, "f", S, "a1", ""); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Remove(filepath.Join(e.store, "catalog.db"+suffix))
	}
	garbage := make([]byte, 8192)
	for i := range garbage {
		garbage[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(e.store, "catalog.db"), garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "f", Create: true})
	if err == nil && (!loc.Continued || loc.Session != S) {
		t.Errorf("Resolve(f) with a corrupt catalog = %+v; want %s (or an error)", loc, S)
	}
}

// TestForkAtTipOfRewoundSessionOutlivesItsSource: a fork after the last
// turn of a session whose later turns a conversation rewind hid (an ACP
// session/fork after a rewind) keeps every state the source had: with the
// source removed and its blobs collected, undo in the fork brings the
// hidden turns back and their files still restore.
func TestForkAtTipOfRewoundSessionOutlivesItsSource(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	if _, err := e.c.Rewind(ctx, controller.Target{Turn: 1}, checkpoints.ScopeConversation, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Fork(ctx, 1, controller.ForkOptions{To: "cut"}); err != nil {
		t.Fatal(err)
	}
	e.c.Close()
	e.c = nil
	st := controller.OpenStore(e.store)
	if _, _, err := st.RemoveSession(ctx, S, true, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Retain(ctx, controller.RetainOptions{CollectOnly: true, AllowEmpty: true}); err != nil {
		t.Fatal(err)
	}
	f := e.open("cut")
	if _, err := f.Undo(ctx, controller.RewindOptions{}); err != nil {
		t.Fatalf("undo in the fork of the source's rewind: %v", err)
	}
	if _, err := f.Rewind(ctx, controller.Target{Turn: 2}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatalf("rewind of the fork to its formerly hidden turn 2: %v", err)
	}
	e.want("a.txt", "a2")
	e.want("b.txt", "b")
	if _, err := f.Rewind(ctx, controller.Target{Turn: 0}, checkpoints.ScopeCode, controller.RewindOptions{}); err != nil {
		t.Fatal(err)
	}
	e.want("a.txt", "a0")
}

// TestContinueWithADamagedCatalog: a catalog whose first page reads but
// whose other pages are damaged (a disk error, a file deleted while in
// use) opens, but cannot be written. It is a cache: Continue still
// records, and Resolve resolves.
func TestContinueWithADamagedCatalog(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	if err := st.Continue(ctx, "f0", S, "a0", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "f0", Create: true}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.store, "catalog.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(b[16])<<8 | int(b[17])
	if pageSize == 1 {
		pageSize = 65536
	}
	for i := pageSize; i < len(b); i++ {
		b[i] = byte(i*31 + 7)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		id := fmt.Sprintf("f%d", i+1)
		if err := st.Continue(ctx, id, S, "a1", ""); err != nil {
			t.Errorf("Continue(%s) with a damaged catalog: %v", id, err)
		}
		if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: id, Create: true}); err != nil || !loc.Continued || loc.Session != S {
			t.Errorf("Resolve(%s) = %+v, %v; want %s", id, loc, err, S)
		}
	}
}

// TestContinueOldLinkWrittenAfterTheBuild: an older ckpt still running
// beside this one (a hook server not restarted since the upgrade) may
// write a link file after the catalog's continuations were built: it
// resolves all the same.
func TestContinueOldLinkWrittenAfterTheBuild(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	threeTurns(e)
	S := e.c.Session()
	st := controller.OpenStore(e.store)
	if loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "late-fork", Create: true}); err != nil || loc.Continued {
		t.Fatalf("Resolve before the link = %+v, %v", loc, err)
	}
	dir := filepath.Join(e.store, "sessions", "late-fork")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "claude-continues"), []byte(S+"\na1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: e.ws, Session: "late-fork", Create: true})
	if err != nil || !loc.Continued || loc.Session != S || loc.ContinuedAt != "a1" {
		t.Errorf("Resolve(late-fork) = %+v, %v; want %s continued at a1", loc, err, S)
	}
}

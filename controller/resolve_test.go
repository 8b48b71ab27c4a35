package controller_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/checkpoints"
	"github.com/ckpt/ckpt/controller"
	"github.com/ckpt/ckpt/retention"
)

// TestResolve: one rule for every front-end. With no session named, a
// workspace without sessions is an error saying so and creates nothing;
// then the most recently active session, found from a subdirectory and
// marked Picked; a unique prefix names a session, an ambiguous one lists
// the matches; a missing session lists the workspace's sessions; a
// recording front-end may name a session that does not exist yet; store-
// wide, a session that exists comes with the workspace it was made for.
func TestResolve(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	st := controller.OpenStore(store)
	defer st.Close()
	var se *controller.SessionError
	_, err = st.Resolve(ctx, controller.ResolveOptions{Dir: ws})
	if !errors.As(err, &se) || se.Named || len(se.Sessions) != 0 || se.Workspace != root {
		t.Fatalf("empty store: %v, want a SessionError for %s with no sessions", err, root)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("Resolve made the store: %v", err)
	}
	loc, err := st.Resolve(ctx, controller.ResolveOptions{Dir: ws, Session: "abc-1", Create: true})
	if err != nil || loc.Session != "abc-1" || loc.Workspace != root {
		t.Fatalf("recording a new session: %+v, %v", loc, err)
	}
	for _, id := range []string{"abc-1", "abc-2", "work-9"} {
		c, err := st.Open(ctx, controller.Options{Workspace: ws, Session: id, NoAutoRetention: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.BeginTurn(ctx, "p", controller.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	loc, err = st.Resolve(ctx, controller.ResolveOptions{Dir: sub})
	if err != nil || loc.Session != "work-9" || !loc.Picked || loc.Workspace != root {
		t.Errorf("no session named, from a subdirectory: %+v, %v; want work-9 in %s, picked", loc, err, root)
	}
	loc, err = st.Resolve(ctx, controller.ResolveOptions{Workspace: ws, Session: "wor"})
	if err != nil || loc.Session != "work-9" || loc.Picked {
		t.Errorf("prefix wor: %+v, %v; want work-9, not picked", loc, err)
	}
	_, err = st.Resolve(ctx, controller.ResolveOptions{Workspace: ws, Session: "abc"})
	if !errors.As(err, &se) || strings.Join(se.Ambiguous, " ") != "abc-1 abc-2" {
		t.Errorf("prefix abc: %v; want ambiguous abc-1, abc-2", err)
	}
	_, err = st.Resolve(ctx, controller.ResolveOptions{Dir: ws, Session: "nosuch"})
	if !errors.As(err, &se) || !se.Named || len(se.Sessions) != 3 || se.Sessions[0].ID != "work-9" {
		t.Fatalf("missing session: %v; want the workspace's 3 sessions, last active first", err)
	}
	if want := "no session nosuch in store"; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "work-9 (1 turns)") {
		t.Errorf("missing session says %q", err)
	}
	if has, _ := checkpoints.HasSession(store, "nosuch"); has {
		t.Errorf("Resolve created the missing session")
	}
	loc, err = st.Resolve(ctx, controller.ResolveOptions{Session: "abc-2"})
	if err != nil || loc.Session != "abc-2" || loc.Workspace != root || !loc.OfSession {
		t.Errorf("store-wide: %+v, %v; want abc-2 with its workspace %s", loc, err, root)
	}
	loc, err = st.Resolve(ctx, controller.ResolveOptions{Session: "new-one", Create: true})
	if err != nil || loc.Session != "new-one" || loc.Workspace != "" || loc.OfSession {
		t.Errorf("store-wide, a session to record: %+v, %v; want no workspace", loc, err)
	}
}

// TestResolveStoreWideLostIndex: a session whose index is lost resolves
// store-wide without a workspace (a command on the store may remove it),
// and fails with a *retention.NoIndexError, as Open would, for a
// front-end that records.
func TestResolveStoreWideLostIndex(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
	c, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: "lost", Store: store, NoAutoRetention: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginTurn(ctx, "p", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	st := controller.OpenStore(store)
	defer st.Close()
	files, _ := filepath.Glob(filepath.Join(st.SessionDir("lost"), "index.db*"))
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	loc, err := st.Resolve(ctx, controller.ResolveOptions{Session: "lost"})
	if err != nil || loc.Session != "lost" || loc.Workspace != "" || loc.OfSession {
		t.Errorf("store-wide, index lost: %+v, %v; want the session, without a workspace", loc, err)
	}
	var lost *retention.NoIndexError
	if _, err := st.Resolve(ctx, controller.ResolveOptions{Session: "lost", Create: true}); !errors.As(err, &lost) {
		t.Errorf("store-wide to record, index lost: %v; want a *retention.NoIndexError", err)
	}
}

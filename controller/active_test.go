package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/controller"
)

// TestActiveSession: with no session named, Resolve picks the workspace's
// last active session, the one that last opened a turn there; without the
// hint file (a store from before it) the one last used; none (the
// default) for a workspace without sessions. Open with NoCreate creates
// nothing for a session the store does not have.
func TestActiveSession(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), filepath.Join(t.TempDir(), "store")
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "elsewhere"), 0o700); err != nil {
		t.Fatal(err)
	}
	// active is the session Resolve picks in root, "" for the default.
	active := func(root string) (string, error) {
		loc, err := controller.OpenStore(store).Resolve(ctx, controller.ResolveOptions{Workspace: root, Create: true})
		if !loc.Picked && loc.Session != controller.WorkspaceSession(root) {
			return "", fmt.Errorf("neither picked nor the default: %+v", loc)
		}
		if !loc.Picked {
			return "", err
		}
		return loc.Session, err
	}
	if s, err := active(root); s != "" || err != nil {
		t.Fatalf("no store: %q, %v; want none", s, err)
	}
	if _, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: "nosuch", Store: store, NoCreate: true}); !errors.Is(err, controller.ErrNotFound) || !strings.Contains(err.Error(), "no such session") {
		t.Fatalf("NoCreate of a session the store lacks: %v, want ErrNotFound, no such session", err)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("NoCreate made the store: %v", err)
	}
	t0 := time.Now().Add(-time.Hour)
	turn := func(session string, at time.Time) {
		t.Helper()
		c, err := controller.Open(ctx, controller.Options{Workspace: ws, Session: session, Store: store, NoAutoRetention: true, Clock: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.BeginTurn(ctx, "p", controller.TurnOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	turn("agent-b", t0.Add(2*time.Minute))
	turn("agent-a", t0.Add(time.Minute)) // last to open a turn, with an older clock
	if s, err := active(root); s != "agent-a" || err != nil {
		t.Errorf("after agent-a's turn: %q, %v; want agent-a", s, err)
	}
	ents, err := filepath.Glob(filepath.Join(store, "workspaces", "*.active"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("hint files %v, %v; want one", ents, err)
	}
	if err := os.Remove(ents[0]); err != nil {
		t.Fatal(err)
	}
	if s, err := active(root); s != "agent-b" || err != nil {
		t.Errorf("without the hint: %q, %v; want agent-b, last used", s, err)
	}
	if s, err := active(filepath.Join(root, "elsewhere")); s != "" || err != nil {
		t.Errorf("another workspace: %q, %v; want none", s, err)
	}
}

package hook

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/ckpt/ckpt/controller"
)

// TestHookServerKeepsOneControllerPerSession: the server opens a session's
// controller once and hands the same one to every event; forget closes it
// (once its last user is done) and the next event opens a fresh one; an
// index another process replaced is noticed and reopened; an idle session
// is closed by the sweep; close ends it all.
func TestHookServerKeepsOneControllerPerSession(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(&Handler{Store: store}, "test", io.Discard)
	defer s.Close()

	c1, rel1, err := s.open(ctx, root, "s1")
	if err != nil {
		t.Fatal(err)
	}
	c2, rel2, err := s.open(ctx, root, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 {
		t.Fatal("two events of one session got two controllers")
	}
	other, relOther, err := s.open(ctx, root, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if other == c1 {
		t.Fatal("two sessions share a controller")
	}
	relOther()
	loc, err := s.locate(ctx, filepath.Join(root, "sub"), "s1")
	if err != nil || !loc.OfSession || loc.Workspace != root {
		t.Errorf("locate from the kept session: %+v, %v", loc, err)
	}

	// Forgotten while in use: still usable until released, then closed.
	s.forget("s1")
	if _, _, err := c1.Checkpoints(ctx, controller.ListOptions{NoFiles: true}); err != nil {
		t.Errorf("a forgotten controller failed while still in use: %v", err)
	}
	rel1()
	rel2()
	if _, _, err := c1.Checkpoints(ctx, controller.ListOptions{NoFiles: true}); err == nil {
		t.Error("a forgotten controller is still open after its last user")
	}
	c3, rel3, err := s.open(ctx, root, "s1")
	if err != nil || c3 == c1 {
		t.Fatalf("after forget: %v, same=%v; want a fresh controller", err, c3 == c1)
	}
	rel3()

	// Another process replaces the index (removes the session and records
	// a new one under its id; Store.Adopt replaces one by a fork): the next
	// event opens the new one.
	if _, _, err := controller.OpenStore(store).RemoveSession(ctx, "s1", true, false); err != nil {
		t.Fatal(err)
	}
	fresh, err := controller.Open(ctx, controller.Options{Workspace: root, Session: "s1", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.BeginTurn(ctx, "in the new index", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh.Close()
	c4, rel4, err := s.open(ctx, root, "s1")
	if err != nil || c4 == c3 {
		t.Fatalf("after the index was replaced: %v, same=%v; want a fresh controller", err, c4 == c3)
	}
	if cps, _, err := c4.Checkpoints(ctx, controller.ListOptions{NoFiles: true}); err != nil || len(cps) != 1 || cps[0].Prompt != "in the new index" {
		t.Errorf("the reopened controller sees %+v, %v; want the new index's turn", cps, err)
	}
	rel4()

	// Idle sessions are closed by the sweep.
	s.Sweep(0)
	if _, _, err := c4.Checkpoints(ctx, controller.ListOptions{NoFiles: true}); err == nil {
		t.Error("the sweep left an idle controller open")
	}
	s.mu.Lock()
	n := len(s.kept)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("after the sweep %d sessions are kept", n)
	}
	s.Close()
	if _, _, err := s.open(ctx, root, "s1"); err == nil {
		t.Error("open after close succeeded")
	}
}

// TestHookServerConcurrentEvents: events of a few sessions at once, with
// forget and the sweep running among them, each get a working controller
// (run with -race).
func TestHookServerConcurrentEvents(t *testing.T) {
	ctx := context.Background()
	ws, store := t.TempDir(), t.TempDir()
	root, err := controller.WorkspaceRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(&Handler{Store: store}, "test", io.Discard)
	defer s.Close()
	errs := make(chan error, 64)
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 10; i++ {
				session := []string{"a", "b", "c"}[(g+i)%3]
				c, release, err := s.open(ctx, root, session)
				if err != nil {
					errs <- err
					return
				}
				if _, _, err := c.Checkpoints(ctx, controller.ListOptions{NoFiles: true}); err != nil {
					errs <- err
				}
				release()
				switch i % 4 {
				case 1:
					s.forget(session)
				case 3:
					s.Sweep(0)
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	s := newHookServer(&app{store: store, stdout: io.Discard, stderr: io.Discard})
	defer s.close()

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

	// Another process replaces the index (as a fork adopted by a command
	// hook does): the next event opens the new one.
	if err := controller.OpenStore(store).DiscardIndex("s1"); err != nil {
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
	s.sweep(0)
	if _, _, err := c4.Checkpoints(ctx, controller.ListOptions{NoFiles: true}); err == nil {
		t.Error("the sweep left an idle controller open")
	}
	s.mu.Lock()
	n := len(s.kept)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("after the sweep %d sessions are kept", n)
	}
	s.close()
	if _, _, err := s.open(ctx, root, "s1"); err == nil {
		t.Error("open after close succeeded")
	}
}

// TestServeTakesHookEvents: plain `ckpt serve` (the session's API and
// page) takes hook events too, with a hook install's token only: its own
// web token is refused on /hook/*, whatever the cwd, and the hook token
// is refused on the API.
func TestServeTakesHookEvents(t *testing.T) {
	s := serveFixture(t, serveOptions{})
	p := filepath.Join(s.ws, "hooked.txt")
	os.WriteFile(p, []byte("before\n"), 0o644)
	root, _ := controller.WorkspaceRoot(s.ws)
	session := controller.WorkspaceSession(root)
	ev := `{"session_id":"` + session + `","cwd":"` + s.ws + `","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + p + `"}}`
	post := func(token, ev string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.url+"/hook/claude", strings.NewReader(ev))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	files := func(token string) (int, map[string]bool) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.url+"/api/checkpoints", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var cps []struct {
			Files []struct{ Path string } `json:"files"`
		}
		json.NewDecoder(resp.Body).Decode(&cps)
		have := map[string]bool{}
		for _, cp := range cps {
			for _, f := range cp.Files {
				have[f.Path] = true
			}
		}
		return resp.StatusCode, have
	}

	// The web token, for this workspace and for another directory.
	other := t.TempDir()
	for _, e := range []string{ev, `{"session_id":"elsewhere","cwd":"` + other + `","hook_event_name":"UserPromptSubmit","prompt":"p"}`} {
		if code, body := post(testToken, e); code != http.StatusUnauthorized {
			t.Errorf("POST /hook/claude with the web token: %d %s, want 401", code, body)
		}
	}
	if _, have := files(testToken); have["hooked.txt"] {
		t.Error("an event with the web token was recorded")
	}
	if controller.OpenStore(s.store).HasIndex("elsewhere") {
		t.Error("an event with the web token created a session")
	}

	// A hook install's token (made after the server started).
	_, hookToken, err := configureHookServer(s.store, "127.0.0.1:1", root)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post(hookToken, ev); code != 200 || body != "" {
		t.Fatalf("POST /hook/claude with the hook token: %d %s (stderr: %s)", code, body, s.stderr.String())
	}
	if code, have := files(testToken); code != 200 || !have["hooked.txt"] {
		t.Errorf("the API does not show the file the hook event captured: %d %v", code, have)
	}
	if code, _ := files(hookToken); code != http.StatusUnauthorized {
		t.Errorf("GET /api/checkpoints with the hook token: %d, want 401", code)
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
	s := newHookServer(&app{store: store, stdout: io.Discard, stderr: io.Discard})
	defer s.close()
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
					s.sweep(0)
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

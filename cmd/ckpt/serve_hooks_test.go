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

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
)

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
		resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
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
	if hasSession(t, s.store, "elsewhere") {
		t.Error("an event with the web token created a session")
	}

	// A hook install's token (made after the server started).
	_, hookToken, err := hook.Configure(s.store, "127.0.0.1:1", root, false)
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

// hasSession reports whether store has session id (with its workspace),
// as a store-wide Store.Resolve finds it.
func hasSession(t *testing.T, store, id string) bool {
	t.Helper()
	loc, err := controller.OpenStore(store).Resolve(context.Background(), controller.ResolveOptions{Session: id, Create: true})
	if err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	return loc.OfSession
}

//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A settings file that exists already (Claude Code writes
// settings.local.json itself, with the umask's 0644) must not keep
// group or world read access once it holds the hook server's token:
// another local user could read the token and drive the server.
func TestInstallHTTPTightensExistingSettings(t *testing.T) {
	r := newHookRig(t, buildCkpt(t))
	local := filepath.Join(r.ws, ".claude", "settings.local.json")
	user := filepath.Join(r.home, ".claude", "settings.json")
	for _, p := range []string{local, user} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"permissions": {"allow": []}}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	r.ckpt("", "install", "claude", "--http", "--user", "--no-scan")
	tok := r.token()
	for _, p := range []string{local, user} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tok) {
			t.Fatalf("%s does not hold the hook token:\n%s", p, b)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v after it got the token; want no access for group and others", p, fi.Mode().Perm())
		}
	}
}

// hookRequest sends one request to the hook server with the given Host.
func (r *hookRig) hookRequest(method, path, host, token string, body []byte) (int, string) {
	r.t.Helper()
	req, err := http.NewRequest(method, "http://"+r.addr+path, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// The hook endpoint checks Host as the API does: a page whose DNS name
// was rebound to 127.0.0.1 sends its own name as Host, and must be
// refused however it came by the rest of the request. The server's own
// address and localhost with its port are accepted.
func TestHookServerRefusesForeignHost(t *testing.T) {
	r := newHookRig(t, buildCkpt(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	tok := r.token()
	r.waitServer()
	ev, _ := json.Marshal(event("h1", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"}))
	for _, host := range []string{"evil.example:" + r.port, "evil.example", "127.0.0.1:1", "10.1.2.3:" + r.port} {
		if code, _ := r.hookRequest(http.MethodPost, "/hook/claude", host, tok, ev); code != http.StatusForbidden {
			t.Errorf("POST with Host %q: status %d, want 403", host, code)
		}
		if code, body := r.hookRequest(http.MethodGet, "/hook/ping", host, tok, nil); code != http.StatusForbidden {
			t.Errorf("GET ping with Host %q: status %d %q, want 403", host, code, body)
		}
	}
	if out, _ := r.ckpt("", "--session", "h1", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("refused requests recorded something: %s", out)
	}
	for _, host := range []string{r.addr, "localhost:" + r.port} {
		if code, body := r.hookRequest(http.MethodPost, "/hook/claude", host, tok, ev); code != http.StatusOK {
			t.Errorf("POST with Host %q: status %d %q, want 200", host, code, body)
		}
	}
}

//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
)

// A settings file that exists already (Claude Code writes
// settings.local.json itself, with the umask's 0644) must not keep
// group or world read access once it holds the hook server's token:
// another local user could read the token and drive the server.
func TestInstallHTTPTightensExistingSettings(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
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
	home, err := controller.WorkspaceRoot(r.home)
	if err != nil {
		t.Fatal(err)
	}
	toks := map[string]string{local: r.token(), user: r.config().TokenFor(home)}
	for _, p := range []string{local, user} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if tok := toks[p]; tok == "" || !strings.Contains(string(b), tok) {
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
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
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
	r := newHookRig(t, ckptBinary(t))
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
	if out, _ := r.ckpt("", "sessions", "--json"); strings.Contains(out, `"h1"`) {
		t.Fatalf("refused requests recorded something: %s", out)
	}
	for _, host := range []string{r.addr, "localhost:" + r.port} {
		if code, body := r.hookRequest(http.MethodPost, "/hook/claude", host, tok, ev); code != http.StatusOK {
			t.Errorf("POST with Host %q: status %d %q, want 200", host, code, body)
		}
	}
}

// Many concurrent PreToolUse events for two sessions, and the server
// told to stop (SIGTERM) while they are in flight: every event answered
// 200 must be in its session's checkpoint, the server must exit cleanly,
// and the store must verify clean.
func TestHookServerStopsWithEventsInFlight(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	tok := r.token()
	r.waitServer()
	r.stopServer()
	if r.ping() != 0 {
		t.Fatal("the installed server still answers")
	}
	for round := 0; round < 3; round++ {
		srv := exec.Command(r.bin, "serve", "--hooks")
		srv.Dir, srv.Env = r.store, r.env()
		var serr bytes.Buffer
		srv.Stderr = &serr
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		r.waitServer()
		sessions := []string{fmt.Sprintf("r%da", round), fmt.Sprintf("r%db", round)}
		for _, s := range sessions {
			if code, body := r.post("/hook/claude", tok, event(s, r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"})); code != 200 {
				t.Fatalf("UserPromptSubmit %s: %d %q", s, code, body)
			}
		}
		const files = 60
		var wg sync.WaitGroup
		var mu sync.Mutex
		answered := map[string][]string{} // session -> files answered 200
		started := make(chan struct{}, 2*files)
		for _, s := range sessions {
			for i := 0; i < files; i++ {
				name := fmt.Sprintf("%s-%02d.txt", s, i)
				p := filepath.Join(r.ws, name)
				if err := os.WriteFile(p, []byte(name+" before\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					body, _ := json.Marshal(write(event(s, r.ws, "PreToolUse", nil), p))
					req, _ := http.NewRequest(http.MethodPost, "http://"+r.addr+"/hook/claude", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+tok)
					started <- struct{}{}
					resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
					if err != nil {
						return // refused or cut by the stop: the agent goes on uncaptured, as documented
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						mu.Lock()
						answered[s] = append(answered[s], name)
						mu.Unlock()
					}
				}()
			}
		}
		for i := 0; i < files/2; i++ {
			<-started
		}
		srv.Process.Signal(syscall.SIGTERM)
		wg.Wait()
		if err := srv.Wait(); err != nil {
			t.Errorf("round %d: the server exited with %v; stderr:\n%s", round, err, serr.String())
		}
		n := 0
		for _, s := range sessions {
			out, _ := r.ckpt("", "--session", s, "--json", "list")
			var cps []struct {
				Files []struct{ Path string } `json:"files"`
			}
			if err := json.Unmarshal([]byte(out), &cps); err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, cp := range cps {
				for _, f := range cp.Files {
					have[f.Path] = true
				}
			}
			for _, name := range answered[s] {
				n++
				if !have[name] {
					t.Errorf("round %d: %s was answered 200 but is not in session %s's checkpoints", round, name, s)
				}
			}
		}
		t.Logf("round %d: %d of %d events answered 200 before the stop", round, n, 2*files)
	}
	r.ckpt("", "verify")
}

// Moving the hook server to another port stops the one at the old port.
// Whatever answers there names the pid to stop in its ping answer; a
// listener another local user put on that port (the default port is
// well known) must not be able to make ckpt signal a process of ours.
func TestInstallHTTPSignalsNoPidAPingNames(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { victim.Wait(); close(exited) }()
	defer victim.Process.Kill()
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		json.NewEncoder(w).Encode(hook.Ping{Ckpt: "squatter", Store: r.store, Pid: victim.Process.Pid})
	}))
	defer fake.Close()
	if _, _, err := hook.Configure(r.store, strings.TrimPrefix(fake.URL, "http://"), r.ws, false); err != nil {
		t.Fatal(err)
	}
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	select {
	case <-exited:
		t.Errorf("install signalled pid %d, which a listener at the old address named", victim.Process.Pid)
	case <-time.After(300 * time.Millisecond):
	}
}

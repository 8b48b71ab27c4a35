//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
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
	"github.com/ckpt/ckpt/internal/loopback/loopbacktest"
)

// hookRig runs the real binary with a store of its own, a workspace, and
// a hook server port nothing else uses.
type hookRig struct {
	t                *testing.T
	bin, ws, store   string
	home, port, addr string
}

func newHookRig(t *testing.T, bin string) *hookRig {
	t.Helper()
	dir := t.TempDir()
	r := &hookRig{t: t, bin: bin, ws: filepath.Join(dir, "ws"), store: filepath.Join(dir, "store"), home: filepath.Join(dir, "home")}
	for _, d := range []string{r.ws, r.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The server, started later by the binary, binds it.
	r.addr = loopbacktest.Addr(t)
	_, r.port, _ = net.SplitHostPort(r.addr)
	t.Cleanup(r.stopServer)
	return r
}

func (r *hookRig) env() []string {
	env := []string{"HOME=" + r.home, "CKPT_HOME=" + r.store}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CKPT_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "CLAUDE_") {
			env = append(env, kv)
		}
	}
	return env
}

// ckpt runs the binary in the workspace with stdin and returns its
// stdout and stderr; it fails the test unless it exits 0.
func (r *hookRig) ckpt(stdin string, args ...string) (string, string) {
	r.t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = r.ws, r.env(), strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("ckpt %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// token returns the hook token of the workspace's install.
func (r *hookRig) token() string {
	r.t.Helper()
	cfg := r.config()
	root, err := controller.WorkspaceRoot(r.ws)
	if err != nil {
		r.t.Fatal(err)
	}
	tok := cfg.TokenFor(root)
	if tok == "" {
		r.t.Fatalf("no hook token for %s in %+v", root, cfg.Tokens)
	}
	return tok
}

func (r *hookRig) config() hook.Config {
	r.t.Helper()
	cfg, ok, err := hook.LoadConfig(r.store)
	if err != nil || !ok {
		r.t.Fatalf("hook server configuration: %v (found %v)", err, ok)
	}
	if cfg.Addr != r.addr {
		r.t.Fatalf("hook server address %s, want %s", cfg.Addr, r.addr)
	}
	return cfg
}

// ping returns the running hook server's pid, or 0 when none proves it
// is there.
func (r *hookRig) ping() int {
	who, st := hook.Probe(r.store, r.config(), time.Second)
	if st != hook.Up {
		return 0
	}
	return who.Pid
}

// waitServer waits for the hook server to answer and returns its pid.
func (r *hookRig) waitServer() int {
	r.t.Helper()
	// Up to two minutes: a safety net, not a deadline a loaded machine can
	// miss.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		if pid := r.ping(); pid != 0 {
			return pid
		}
		time.Sleep(25 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(r.store, hook.ServerLogFile))
	r.t.Fatalf("no hook server answers at %s; its log:\n%s", r.addr, log)
	return 0
}

// stopServer stops the hook server this rig's hooks started, if any, and
// waits until it no longer answers and, started in the background, has
// exited: until then it holds the lock that keeps a hook from starting
// another.
func (r *hookRig) stopServer() {
	if _, ok, _ := hook.LoadConfig(r.store); !ok {
		return
	}
	pid := r.ping()
	if pid == 0 {
		return
	}
	syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && (r.ping() != 0 || hook.Running(r.store, hook.ServerLockFile)) {
		time.Sleep(25 * time.Millisecond)
	}
}

// serverExits says whether the hook server lets go of its lock (so has
// exited) within two minutes. Uninstall stops it and waits a few seconds
// at most for that: a loaded machine can outlast them, but a server that
// was never stopped does not exit.
func (r *hookRig) serverExits() bool {
	for deadline := time.Now().Add(2 * time.Minute); hook.Running(r.store, hook.ServerLockFile); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// stillListens says whether something still accepts connections at addr
// two minutes on: a stopped server closes its port as it exits, which
// install and uninstall wait for only a few seconds.
func stillListens(addr string) bool {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(25 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		if time.Now().After(deadline) {
			return true
		}
	}
}

// post sends one event to the hook server and returns the status and body.
func (r *hookRig) post(path, token string, ev map[string]any, hdr ...string) (int, string) {
	r.t.Helper()
	body, _ := json.Marshal(ev)
	req, _ := http.NewRequest(http.MethodPost, "http://"+r.addr+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		r.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func event(session, cwd, name string, extra map[string]any) map[string]any {
	m := map[string]any{"session_id": session, "cwd": cwd, "hook_event_name": name, "transcript_path": ""}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func write(event map[string]any, path string) map[string]any {
	event["tool_name"] = "Write"
	event["tool_input"] = map[string]any{"file_path": path, "content": "new"}
	return event
}

// settingsHook is one hook in a Claude settings file.
type settingsHook struct {
	Type    string            `json:"type"`
	Command string            `json:"command,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// ckpts says whether h is one of ckpt's: an http hook to the hook
// server's /hook/claude, or a command running "hook claude".
func (h settingsHook) ckpts() bool {
	if h.Type == "http" {
		return strings.Contains(h.URL, "/hook/claude")
	}
	return strings.Contains(h.Command, " hook claude")
}

func (h settingsHook) same(want settingsHook) bool {
	return h.Type == want.Type && h.Command == want.Command && h.URL == want.URL && maps.Equal(h.Headers, want.Headers)
}

// settingsHooks reads a Claude settings file's hooks as event -> the
// hooks ckpt recognises as its own there.
func settingsHooks(t *testing.T, path string) map[string][]settingsHook {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []settingsHook `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]settingsHook{}
	for ev, groups := range s.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if h.ckpts() {
					out[ev] = append(out[ev], h)
				}
			}
		}
	}
	return out
}

// TestInstallClaudeHTTP: --http writes PreToolUse as an http hook with the
// store's token into .claude/settings.local.json (the command hooks of the
// other events start the server), exactly and idempotently; switching
// between command and http hooks moves them in place, and uninstall
// removes both kinds.
func TestInstallClaudeHTTP(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	shared := filepath.Join(r.ws, ".claude", "settings.json")
	local := filepath.Join(r.ws, ".claude", "settings.local.json")

	out, _ := r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	if !strings.Contains(out, "POST http://"+r.addr+"/hook/claude") || strings.Contains(out, r.token()) {
		t.Errorf("install --http said:\n%s\nwant the hook URL, never the token", out)
	}
	got := settingsHooks(t, local)
	want := settingsHook{Type: "http", URL: "http://" + r.addr + "/hook/claude", Headers: map[string]string{"Authorization": "Bearer " + r.token()}}
	if len(got["PreToolUse"]) != 1 || !got["PreToolUse"][0].same(want) {
		t.Errorf("PreToolUse hooks in %s = %+v, want exactly %+v", local, got["PreToolUse"], want)
	}
	for _, ev := range []string{"UserPromptSubmit", "SessionStart"} {
		if len(got[ev]) != 1 || got[ev][0].Type != "command" || !strings.HasSuffix(got[ev][0].Command, " hook claude --start-server") {
			t.Errorf("%s hooks = %+v, want one command hook starting the server", ev, got[ev])
		}
	}
	for _, ev := range []string{"Stop", "SessionEnd"} {
		if len(got[ev]) != 1 || !strings.HasSuffix(got[ev][0].Command, " hook claude") {
			t.Errorf("%s hooks = %+v, want one plain command hook", ev, got[ev])
		}
	}
	if fi, err := os.Stat(local); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v; want 0600 (it holds the token)", local, err, fi.Mode().Perm())
	}
	if h := settingsHooks(t, shared); len(h) != 0 {
		t.Errorf("settings.json got ckpt hooks %+v; the http install belongs in settings.local.json", h)
	}
	// The install started the server.
	r.waitServer()

	before, _ := os.ReadFile(local)
	out, _ = r.ckpt("", "install", "claude", "--http", "--no-scan")
	if after, _ := os.ReadFile(local); !strings.Contains(out, "nothing changed") || !bytes.Equal(before, after) {
		t.Errorf("second install --http said %q and changed the file:\n%s", out, after)
	}

	// Back to command hooks: moved in place, not duplicated.
	r.ckpt("", "install", "claude", "--no-scan")
	if h := settingsHooks(t, local); len(h) != 0 {
		t.Errorf("after install without --http, settings.local.json still has %+v", h)
	}
	h := settingsHooks(t, shared)
	if len(h) != 5 || len(h["PreToolUse"]) != 1 || h["PreToolUse"][0].Type != "command" {
		t.Errorf("after install without --http, settings.json has %+v; want the five command hooks", h)
	}
	// And to http again.
	r.ckpt("", "install", "claude", "--http", "--no-scan")
	if h := settingsHooks(t, shared); len(h) != 0 {
		t.Errorf("after install --http, settings.json still has %+v", h)
	}
	if h := settingsHooks(t, local); len(h["PreToolUse"]) != 1 || h["PreToolUse"][0].Type != "http" {
		t.Errorf("after install --http, settings.local.json has %+v", h)
	}

	// Another port: the server at the old one stops, one at the new one
	// starts, and the hook posts there.
	oldPid := r.waitServer()
	oldAddr := r.addr
	r.addr = loopbacktest.Addr(t)
	_, r.port, _ = net.SplitHostPort(r.addr)
	newPort := r.port
	out, _ = r.ckpt("", "install", "claude", "--http", "--port", newPort, "--no-scan")
	if !strings.Contains(out, "POST http://"+r.addr+"/hook/claude") {
		t.Errorf("install --port %s said:\n%s", newPort, out)
	}
	if pid := r.waitServer(); pid == oldPid {
		t.Errorf("the server at the new port is the old process %d", pid)
	}
	if stillListens(oldAddr) {
		t.Errorf("something still listens at the old address %s", oldAddr)
	}
	if h := settingsHooks(t, local); len(h["PreToolUse"]) != 1 || h["PreToolUse"][0].URL != "http://"+r.addr+"/hook/claude" {
		t.Errorf("after the port changed, PreToolUse hooks = %+v", h["PreToolUse"])
	}

	out, _ = r.ckpt("", "uninstall", "claude")
	if a, b := settingsHooks(t, shared), settingsHooks(t, local); len(a)+len(b) != 0 {
		t.Errorf("after uninstall: settings.json %+v, settings.local.json %+v", a, b)
	}
	// Uninstall undoes the rest of what install did: the settings files
	// and the directory it created are gone, each said once, and the hook
	// server, which no install uses now, is stopped.
	if _, err := os.Stat(filepath.Join(r.ws, ".claude")); err == nil {
		t.Errorf("after uninstall, .claude is left; uninstall said:\n%s", out)
	}
	if strings.Contains(out, "updated") || strings.Count(out, "removed "+local+"\n") != 1 {
		t.Errorf("uninstall said:\n%s\nwant %s removed, once, and nothing updated", out, local)
	}
	if !r.serverExits() {
		t.Error("the hook server still runs after the uninstall of the only install using it")
	}
	if stillListens(r.addr) {
		t.Errorf("something still listens at %s after uninstall", r.addr)
	}
}

// TestHookServerEvents: events POSTed to the server are recorded as the
// command hook records them, for several sessions at once; a request
// without the token, or from a browser, is refused; --strict's blocking
// failure comes back as Claude Code's deny decision; and the prompt's
// command hook starts the server again when it is not running.
func TestHookServerEvents(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	tok := r.token()
	r.waitServer()

	if code, _ := r.post("/hook/claude", "", event("s1", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"})); code != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", code)
	}
	if code, _ := r.post("/hook/claude", "wrong"+tok, event("s1", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"})); code != http.StatusUnauthorized {
		t.Errorf("wrong token: status %d, want 401", code)
	}
	if code, _ := r.post("/hook/claude", tok, event("s1", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"}), "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin: status %d, want 403", code)
	}
	if out, _ := r.ckpt("", "sessions", "--json"); strings.Contains(out, `"s1"`) {
		t.Fatalf("refused requests recorded something: %s", out)
	}

	// Two sessions, each with a file per tool call, posted concurrently.
	sessions := []string{"s1", "s2"}
	const files = 8
	for _, s := range sessions {
		if code, body := r.post("/hook/claude", tok, event(s, r.ws, "UserPromptSubmit", map[string]any{"prompt": "edit " + s})); code != 200 || body != "" {
			t.Fatalf("UserPromptSubmit %s: %d %q", s, code, body)
		}
		for i := 0; i < files; i++ {
			if err := os.WriteFile(filepath.Join(r.ws, fmt.Sprintf("%s-%d.txt", s, i)), []byte(fmt.Sprintf("%s %d before\n", s, i)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(sessions)*files)
	for _, s := range sessions {
		for i := 0; i < files; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := filepath.Join(r.ws, fmt.Sprintf("%s-%d.txt", s, i))
				if code, body := r.post("/hook/claude", tok, write(event(s, r.ws, "PreToolUse", nil), p)); code != 200 || body != "" {
					errs <- fmt.Sprintf("PreToolUse %s: %d %q", p, code, body)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for _, s := range sessions {
		for i := 0; i < files; i++ {
			os.WriteFile(filepath.Join(r.ws, fmt.Sprintf("%s-%d.txt", s, i)), []byte("after\n"), 0o644)
		}
	}
	for _, s := range sessions {
		r.ckpt("", "--session", s, "rewind", "0", "--scope", "code")
		for i := 0; i < files; i++ {
			b, _ := os.ReadFile(filepath.Join(r.ws, fmt.Sprintf("%s-%d.txt", s, i)))
			if want := fmt.Sprintf("%s %d before\n", s, i); string(b) != want {
				t.Errorf("after rewinding %s: %s-%d.txt = %q, want %q", s, s, i, b, want)
			}
		}
	}

	// A capture that fails: nothing blocked without strict, Claude
	// Code's deny decision with it.
	dir := filepath.Join(r.ws, "adir")
	os.Mkdir(dir, 0o755)
	if code, body := r.post("/hook/claude", tok, write(event("s1", r.ws, "PreToolUse", nil), dir)); code != 200 || body != "" {
		t.Errorf("failed capture without strict: %d %q, want 200 and no body", code, body)
	}
	code, body := r.post("/hook/claude?strict=1", tok, write(event("s1", r.ws, "PreToolUse", nil), dir))
	var raw map[string]map[string]string
	json.Unmarshal([]byte(body), &raw)
	if code != 200 || raw["hookSpecificOutput"]["permissionDecision"] != "deny" || raw["hookSpecificOutput"]["hookEventName"] != "PreToolUse" ||
		!strings.Contains(raw["hookSpecificOutput"]["permissionDecisionReason"], "adir") {
		t.Errorf("failed capture with strict: %d %s, want 200 and a PreToolUse deny naming the path", code, body)
	}

	// The server goes away; the next prompt's command hook starts it.
	status := fmt.Sprintf(`{"session_id":"s1","cwd":%q,"workspace":{"project_dir":%q}}`, r.ws, r.ws)
	if out, _ := r.ckpt(status, "statusline"); strings.Contains(out, "down") {
		t.Errorf("statusline with the server running: %q", out)
	}
	r.stopServer()
	if r.ping() != 0 {
		t.Fatal("the server still answers after SIGTERM")
	}
	if out, _ := r.ckpt(status, "statusline"); !strings.Contains(out, "hook server down, edits not captured") {
		t.Errorf("statusline with the server stopped: %q, want the warning", out)
	}
	if _, stderr := r.ckpt("", "--session", "s1", "status"); !strings.Contains(stderr, "hook server, which is not running") {
		t.Errorf("status with the server stopped said %q, want the warning", stderr)
	}
	ev, _ := json.Marshal(event("s3", r.ws, "UserPromptSubmit", map[string]any{"prompt": "again"}))
	r.ckpt(string(ev), "hook", "claude", "--start-server")
	r.waitServer()
	p := filepath.Join(r.ws, "late.txt")
	os.WriteFile(p, []byte("late\n"), 0o644)
	if code, body := r.post("/hook/claude", tok, write(event("s3", r.ws, "PreToolUse", nil), p)); code != 200 || body != "" {
		t.Fatalf("PreToolUse after restart: %d %q", code, body)
	}
	if out, _ := r.ckpt("", "--session", "s3", "list"); !strings.Contains(out, "late.txt") {
		t.Errorf("the restarted server did not capture late.txt:\n%s", out)
	}
}

// TestHookStartsServerAfterTheOldOneLetsGo: a prompt's hook that finds
// nothing listening while the old server, shutting down, still holds the
// lock that keeps hooks from starting a second one, starts the server
// once that lock is free, instead of giving up and recording the whole
// workspace as the prompt's turn.
func TestHookStartsServerAfterTheOldOneLetsGo(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	r.waitServer()
	r.stopServer()
	if r.ping() != 0 {
		t.Fatal("the server still answers after SIGTERM")
	}
	// The old server's last moments: the port closed, the lock held.
	held, ok, err := hook.TryLock(filepath.Join(r.store, hook.ServerLockFile))
	if err != nil || !ok {
		t.Fatalf("take the server lock: %v %v", ok, err)
	}
	ev, _ := json.Marshal(event("s1", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"}))
	cmd := exec.Command(r.bin, "hook", "claude", "--start-server")
	cmd.Dir, cmd.Env, cmd.Stdin = r.ws, r.env(), bytes.NewReader(ev)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The hook finds the port closed and the lock held; the lock goes
	// while it waits (it waits up to 3 s for a server to answer).
	time.Sleep(time.Second)
	held.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("hook: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "whole workspace") {
		t.Errorf("the hook gave up on the server: %s", stderr.String())
	}
	r.waitServer()
}

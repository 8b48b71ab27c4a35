//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/agent/hook"
)

// squatEnv names the address TestHookSquatterProcess listens on when the
// test binary runs as the squatter.
const squatEnv = "CKPT_TEST_SQUAT_ADDR"

// seenRequest is one request the squatter received, in full.
type seenRequest struct {
	Method, URL string
	Header      http.Header
	Body        string
}

// squatHandler answers everything as the measured squatter did: a ping
// answer naming the store, with a made-up proof, and 200 to every hook
// event. It reports each request it receives.
func squatHandler(store string, seen func(seenRequest)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen(seenRequest{Method: r.Method, URL: r.URL.String(), Header: r.Header, Body: string(body)})
		json.NewEncoder(w).Encode(hook.Ping{Ckpt: "x", Store: store, Pid: os.Getpid(), Challenge: "c", Proof: strings.Repeat("ab", 32)})
	})
}

// TestHookSquatterProcess is the squatter when the test binary runs with
// $CKPT_TEST_SQUAT_ADDR set (as another user): it listens there and prints
// each request it receives as a JSON line on stdout.
func TestHookSquatterProcess(t *testing.T) {
	addr := os.Getenv(squatEnv)
	if addr == "" {
		t.Skip("the squatter of TestHookPortSquatterGetsNoToken")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	fmt.Println("ready")
	http.Serve(ln, squatHandler(os.Getenv("CKPT_TEST_SQUAT_STORE"), func(r seenRequest) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(r)
	}))
}

// squatter listens at addr, as the user nobody when this test runs as
// root (a copy of the test binary, TestHookSquatterProcess), else in this
// process, and returns what it has received so far.
func squatter(t *testing.T, addr, store string) (received func() []seenRequest, asUser string) {
	t.Helper()
	var mu sync.Mutex
	var got []seenRequest
	seen := func(r seenRequest) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
	}
	received = func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]seenRequest(nil), got...)
	}
	nobody, err := user.Lookup("nobody")
	if os.Geteuid() != 0 || err != nil {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: squatHandler(store, seen)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return received, "this process's user"
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	// A copy nobody can run: the test binary's own directory is private.
	dir, err := os.MkdirTemp("", "ckpt-squat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "squatter")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHookSquatterProcess$")
	cmd.Dir = tmp
	cmd.Env = []string{squatEnv + "=" + addr, "CKPT_TEST_SQUAT_STORE=" + store, "TMPDIR=" + tmp, "HOME=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the squatter did not start: %q %s", lines.Text(), stderr.String())
	}
	go func() {
		for lines.Scan() {
			var r seenRequest
			if json.Unmarshal(lines.Bytes(), &r) == nil {
				seen(r)
			}
		}
	}()
	return received, "uid " + nobody.Uid + " (nobody)"
}

// TestHookPortSquatterGetsNoToken: while ckpt's hook server is down,
// another local user listens on its port and answers like a ckpt server.
// The prompt's command hook must send that listener no token (nor the
// key), say loudly that the port is not ckpt's, and still record what the
// agent's tool calls change (they post to the squatter, uncaptured): the
// prompt's turn records the whole workspace, so a rewind brings the file
// back. The command-hook capture of a tool call is recorded too, and the
// status line and `status` say what is wrong.
func TestHookPortSquatterGetsNoToken(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	tok, key := r.token(), r.config().Key
	r.waitServer()
	r.stopServer()
	if r.ping() != 0 {
		t.Fatal("the hook server still answers")
	}
	received, who := squatter(t, r.addr, r.store)
	t.Logf("squatter runs as %s", who)

	f := filepath.Join(r.ws, "f.txt")
	if err := os.WriteFile(f, []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := filepath.Join(r.ws, "g.txt")
	if err := os.WriteFile(g, []byte("g orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(event("sq", r.ws, "UserPromptSubmit", map[string]any{"prompt": "edit f"}))
	stdout, stderr := r.ckpt(string(ev), "hook", "claude", "--start-server")
	if !strings.Contains(stderr, "cannot prove it is this ckpt's hook server") {
		t.Errorf("the prompt hook said %q; want a warning that the port is not ckpt's", stderr)
	}
	var reply struct{ SystemMessage string }
	if err := json.Unmarshal([]byte(stdout), &reply); err != nil || !strings.Contains(reply.SystemMessage, "cannot prove it is this ckpt's hook server") {
		t.Errorf("the prompt hook printed %q (%v); want a systemMessage Claude Code shows the user", stdout, err)
	}
	// The agent's Write goes to the squatter: nothing captures it there.
	if err := os.WriteFile(f, []byte("edited by the agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A tool call through the command hook is captured locally.
	pre, _ := json.Marshal(write(event("sq", r.ws, "PreToolUse", nil), g))
	r.ckpt(string(pre), "hook", "claude")
	os.WriteFile(g, []byte("g edited\n"), 0o644)
	if out, _ := r.ckpt("", "--session", "sq", "list", "--json"); !strings.Contains(out, `"g.txt"`) {
		t.Errorf("the command hook's capture is not in the session:\n%s", out)
	}

	status := fmt.Sprintf(`{"session_id":"sq","cwd":%q,"workspace":{"project_dir":%q}}`, r.ws, r.ws)
	if out, _ := r.ckpt(status, "statusline"); !strings.Contains(out, "held by a program that is not ckpt") {
		t.Errorf("statusline with the port squatted: %q", out)
	}
	if _, stderr := r.ckpt("", "--session", "sq", "status"); !strings.Contains(stderr, "held by a program that is not ckpt") {
		t.Errorf("status with the port squatted said %q", stderr)
	}
	// Installing again at the same port stops nothing there and sends
	// nothing either.
	r.ckpt("", "install", "claude", "--http", "--no-scan")

	got := received()
	if len(got) == 0 {
		t.Fatal("the squatter received nothing: the test did not reach it")
	}
	for _, req := range got {
		all, _ := json.Marshal(req)
		if strings.Contains(string(all), tok) || strings.Contains(string(all), key) {
			t.Errorf("the squatter received a secret: %s", all)
		}
		if req.Method != http.MethodGet || !strings.HasPrefix(req.URL, "/hook/ping?nonce=") {
			t.Errorf("the squatter received %s %s; want only pings", req.Method, req.URL)
		}
	}

	r.ckpt("", "--session", "sq", "rewind", "0", "--scope", "code")
	for p, want := range map[string]string{f: "orig\n", g: "g orig\n"} {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("after rewind 0: %s = %q, want %q", filepath.Base(p), b, want)
		}
	}
}

// TestHookTokenScope: a hook token is good for hook events of the
// workspace it was installed for and nothing else: no session rooted
// elsewhere (a new one, the filesystem root, or another workspace's
// existing one), no capture outside the workspace, no stopping the
// server, no web API. `ckpt serve`'s own web token is refused on /hook/*
// for any cwd.
func TestHookTokenScope(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	tok := r.token()
	pid := r.waitServer()

	other := filepath.Join(filepath.Dir(r.ws), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(other, "secret.txt")
	os.WriteFile(secret, []byte("secret\n"), 0o644)
	// Another workspace's session, recorded by the command line.
	cmd := exec.Command(r.bin, "--session", "victim", "turn", "victim's turn")
	cmd.Dir, cmd.Env = other, r.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("turn in %s: %v %s", other, err, out)
	}
	turns := func(ws, session string) string {
		out, _ := r.ckpt("", "--workspace", ws, "--session", session, "list", "--json")
		return out
	}
	victimBefore := turns(other, "victim")

	for _, tc := range []struct {
		name string
		ev   map[string]any
	}{
		{"new session elsewhere", event("out", other, "UserPromptSubmit", map[string]any{"prompt": "p"})},
		{"capture elsewhere", write(event("out2", other, "PreToolUse", nil), secret)},
		{"session at the root", write(event("root", "/", "PreToolUse", nil), "/etc/passwd")},
		{"another workspace's session", event("victim", other, "UserPromptSubmit", map[string]any{"prompt": "injected"})},
	} {
		if code, body := r.post("/hook/claude", tok, tc.ev); code != http.StatusForbidden {
			t.Errorf("%s: %d %q, want 403", tc.name, code, body)
		}
	}
	for _, s := range []string{"out", "out2", "root"} {
		if hasSession(t, r.store, s) {
			t.Errorf("session %s was created through a token of another workspace", s)
		}
	}
	// The victim's session id with a cwd inside the token's workspace.
	r.post("/hook/claude", tok, event("victim", r.ws, "UserPromptSubmit", map[string]any{"prompt": "injected"}))
	if after := turns(other, "victim"); after != victimBefore {
		t.Errorf("the other workspace's session changed:\n%s\nwas:\n%s", after, victimBefore)
	}
	// In the workspace: recorded, but a path outside it is not.
	if code, body := r.post("/hook/claude", tok, event("in", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"})); code != 200 {
		t.Fatalf("UserPromptSubmit in the workspace: %d %q", code, body)
	}
	r.post("/hook/claude", tok, write(event("in", r.ws, "PreToolUse", nil), secret))
	if out := turns(r.ws, "in"); strings.Contains(out, "secret") {
		t.Errorf("a path outside the workspace was captured: %s", out)
	}

	// No other API: the token does not stop the server.
	if code, _ := r.post("/hook/stop", tok, nil); code != http.StatusUnauthorized {
		t.Errorf("POST /hook/stop with the hook token: %d, want 401", code)
	}
	if got := r.ping(); got != pid {
		t.Errorf("the hook server (pid %d) no longer answers: %d", pid, got)
	}

	// `ckpt serve`: its web token is refused on /hook/*, the hook token
	// on its API.
	srv := exec.Command(r.bin, "serve")
	srv.Dir, srv.Env = r.ws, r.env()
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	var line struct{ URL, Token string }
	if err := json.NewDecoder(out).Decode(&line); err != nil {
		t.Fatal(err)
	}
	call := func(method, path, token string, ev map[string]any) int {
		t.Helper()
		body, _ := json.Marshal(ev)
		req, _ := http.NewRequest(method, line.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, ev := range []map[string]any{
		event("web1", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"}),
		event("web2", other, "UserPromptSubmit", map[string]any{"prompt": "p"}),
	} {
		if code := call(http.MethodPost, "/hook/claude", line.Token, ev); code != http.StatusUnauthorized {
			t.Errorf("ckpt serve's web token on /hook/claude (cwd %s): %d, want 401", ev["cwd"], code)
		}
	}
	for _, s := range []string{"web1", "web2"} {
		if hasSession(t, r.store, s) {
			t.Errorf("the web token created session %s", s)
		}
	}
	if code := call(http.MethodGet, "/api/checkpoints", tok, nil); code != http.StatusUnauthorized {
		t.Errorf("the hook token on the web API: %d, want 401", code)
	}
	if code := call(http.MethodPost, "/hook/claude", tok, event("in", r.ws, "UserPromptSubmit", map[string]any{"prompt": "via serve"})); code != http.StatusOK {
		t.Errorf("the hook token on ckpt serve's /hook/claude: %d, want 200", code)
	}

	// A prompt in a directory no install's token is good for: its tool
	// calls would be refused, so the prompt hook says so and its turn
	// records the whole directory.
	ev, _ := json.Marshal(event("outside", other, "UserPromptSubmit", map[string]any{"prompt": "p"}))
	hookCmd := exec.Command(r.bin, "hook", "claude", "--start-server")
	hookCmd.Dir, hookCmd.Env, hookCmd.Stdin = other, r.env(), bytes.NewReader(ev)
	var hookOut, hookErr bytes.Buffer
	hookCmd.Stdout, hookCmd.Stderr = &hookOut, &hookErr
	if err := hookCmd.Run(); err != nil {
		t.Fatalf("prompt hook in %s: %v %s", other, err, hookErr.String())
	}
	if !strings.Contains(hookErr.String(), "no ckpt install --http is for") || !strings.Contains(hookOut.String(), "systemMessage") {
		t.Errorf("prompt hook outside every install: stdout %q stderr %q; want the warning in both", hookOut.String(), hookErr.String())
	}
	// The agent's edit there, which the server refused to capture, is
	// rewound from the turn's record of the workspace.
	os.WriteFile(secret, []byte("changed by the agent\n"), 0o644)
	r.ckpt("", "--workspace", other, "--session", "outside", "rewind", "0", "--scope", "code")
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Errorf("after rewind 0 outside every install: %q, want the state before the prompt", b)
	}

	// Uninstalling revokes the token at once, in the running server
	// (which another workspace's install keeps running).
	r.ckpt("", "--workspace", other, "install", "claude", "--http", "--no-scan")
	r.ckpt("", "uninstall", "claude")
	if code, body := r.post("/hook/claude", tok, event("in", r.ws, "UserPromptSubmit", map[string]any{"prompt": "after uninstall"})); code != http.StatusUnauthorized {
		t.Errorf("the token after uninstall: %d %q, want 401", code, body)
	}
	// The last install using the server goes: so does the server.
	r.ckpt("", "--workspace", other, "uninstall", "claude")
	if !r.serverExits() {
		t.Error("the hook server still runs after the last --http install was uninstalled")
	}
}

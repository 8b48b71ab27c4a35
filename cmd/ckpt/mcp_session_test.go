package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mcpPipe runs `ckpt --store STORE mcp` in dir with no session named,
// feeds it lines and then the end of input, and returns its responses by
// id, its stderr and its error.
func mcpPipe(t *testing.T, dir, store string, lines ...string) (map[string]json.RawMessage, string, error) {
	t.Helper()
	cmd := exec.Command(ckptBinary(t), "--store", store, "mcp")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "CKPT_SESSION", "CKPT_WORKSPACE", "CKPT_HOME", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	got := map[string]json.RawMessage{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		got[string(m.ID)] = m.Result
	}
	return got, stderr.String(), err
}

const (
	mcpInit        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
	mcpInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	mcpToolsList   = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	mcpStatus      = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{}}}`
)

// TestMCPServesLastActiveSession: started by a client with no session
// named, `ckpt mcp` serves the workspace's most recently active session (an
// agent's, here, not the workspace's default), says which on stderr, and
// its status names the store. Requests piped in before the end of input
// are all answered.
func TestMCPServesLastActiveSession(t *testing.T) {
	e := newMCPEnv(t, ckptBinary(t))
	e.ckpt("--session", "agent-7f3a", "turn", "the agent's prompt")
	got, stderr, err := mcpPipe(t, e.ws, e.store, mcpInit, mcpInitialized, mcpToolsList, mcpStatus)
	if err != nil {
		t.Fatalf("ckpt mcp: %v\n%s", err, stderr)
	}
	for _, id := range []string{"1", "2", "3"} {
		if got[id] == nil {
			t.Errorf("request %s has no answer at the end of input; got %d answers", id, len(got))
		}
	}
	var status struct {
		Structured map[string]any `json:"structuredContent"`
	}
	if err := json.Unmarshal(got["3"], &status); err != nil {
		t.Fatalf("status: %v: %s", err, got["3"])
	}
	st := status.Structured
	if st["session"] != "agent-7f3a" || st["store"] != e.store || st["open_prompt"] != "the agent's prompt" {
		t.Errorf("status serves %v, want session agent-7f3a of store %s", st, e.store)
	}
	if !strings.Contains(stderr, "ckpt: session agent-7f3a, the last active in ") || !strings.Contains(stderr, "(store "+e.store+")") {
		t.Errorf("stderr does not say which session and store:\n%s", stderr)
	}
}

// TestMCPWithoutSessionCreatesNothing: a client that started `ckpt mcp`
// against a store with no session for the workspace (no $CKPT_HOME, say)
// gets an error naming the store, and no store is made.
func TestMCPWithoutSessionCreatesNothing(t *testing.T) {
	ws := t.TempDir()
	store := filepath.Join(t.TempDir(), "nostore")
	_, stderr, err := mcpPipe(t, ws, store, mcpInit, mcpInitialized, mcpStatus)
	if err == nil {
		t.Fatalf("ckpt mcp with no session served one:\n%s", stderr)
	}
	if !strings.Contains(stderr, "no checkpoints yet") || !strings.Contains(stderr, "in store "+store) {
		t.Errorf("stderr does not name the store:\n%s", stderr)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("ckpt mcp made the store %s (%v)", store, err)
	}
}

// TestServeServesLastActiveSession: `ckpt serve` started with no session
// named serves the page and API of the workspace's most recently active
// session (an agent's), and says which on stderr.
func TestServeServesLastActiveSession(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	if code, _, stderr := ckptRun(t, ws, store, "turn", "a manual turn"); code != 0 {
		t.Fatalf("turn: %s", stderr)
	}
	if code, _, stderr := ckptRun(t, ws, store, "--session", "agent-51c2", "turn", "the agent's prompt"); code != 0 {
		t.Fatalf("turn: %s", stderr)
	}
	cmd := exec.Command(ckptBinary(t), "--store", store, "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "CKPT_SESSION=", "CKPT_WORKSPACE=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve's line: %v\n%s", err, stderr.String())
	}
	var started struct{ URL, Token string }
	if err := json.Unmarshal([]byte(line), &started); err != nil {
		t.Fatal(err)
	}
	code, body := call(t, "GET", started.URL+"/api/checkpoints", started.Token, "")
	if code != 200 || !strings.Contains(body, "the agent's prompt") || strings.Contains(body, "a manual turn") {
		t.Errorf("checkpoints served: %d %s", code, body)
	}
	if !strings.Contains(stderr.String(), "ckpt: session agent-51c2, the last active in ") {
		t.Errorf("stderr does not say which session:\n%s", stderr.String())
	}
}

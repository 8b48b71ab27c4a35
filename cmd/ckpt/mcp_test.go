package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ckpt/ckpt/controller"
)

// `ckpt mcp` is exercised as a real subprocess of the real binary, by real
// MCP clients: the Go SDK's client over a command transport, raw JSON-RPC
// lines (stdout must carry nothing else), and the MCP Inspector's CLI when
// $CKPT_MCP_INSPECTOR names it (.ci/run installs it from npm).

// mcpEnv is a workspace whose three turns were recorded by the ckpt binary:
//
//	turn 0 "create":  new.txt created; a.txt (CRLF) changed; tool.bin (binary, 0755) rewritten, 0644
//	turn 1 "edit":    a.txt changed again
//	turn 2 "shell":   open; a.txt deleted
type mcpEnv struct {
	t              *testing.T
	bin, ws, store string
	before         map[string][]byte // at turn 0's start; nil = absent
	now            map[string][]byte
}

var mcpBinary = func() []byte {
	b := make([]byte, 0, 512)
	for i := range 512 {
		b = append(b, byte(i*7))
	}
	return b
}()

func newMCPEnv(t *testing.T, bin string) *mcpEnv {
	t.Helper()
	dir := t.TempDir()
	e := &mcpEnv{t: t, bin: bin, ws: filepath.Join(dir, "ws"), store: filepath.Join(dir, "store")}
	if err := os.Mkdir(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("a.txt", []byte("one\r\ntwo\r\n"), 0o644)
	e.write("tool.bin", mcpBinary, 0o755)
	e.before = map[string][]byte{"a.txt": []byte("one\r\ntwo\r\n"), "tool.bin": mcpBinary, "new.txt": nil}
	e.ckpt("turn", "create")
	e.ckpt("capture", "a.txt", "tool.bin", "new.txt")
	e.write("a.txt", []byte("one\ntwo\nthree\n"), 0o644)
	e.write("tool.bin", []byte("#!/bin/sh\necho replaced\n"), 0o644)
	e.write("new.txt", []byte("brand new\n"), 0o644)
	e.ckpt("turn", "edit")
	e.ckpt("capture", "a.txt")
	e.write("a.txt", []byte("edited\n"), 0o644)
	e.ckpt("turn", "shell")
	e.ckpt("capture", "a.txt")
	if err := os.Remove(filepath.Join(e.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	e.now = map[string][]byte{"a.txt": nil, "tool.bin": []byte("#!/bin/sh\necho replaced\n"), "new.txt": []byte("brand new\n")}
	return e
}

func (e *mcpEnv) write(rel string, b []byte, mode os.FileMode) {
	e.t.Helper()
	p := filepath.Join(e.ws, rel)
	if err := os.WriteFile(p, b, mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		e.t.Fatal(err)
	}
}

func (e *mcpEnv) ckpt(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"--workspace", e.ws, "--store", e.store}, args...)...)
	cmd.Dir = e.ws
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("ckpt %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// files checks every file of want byte for byte (nil: absent), and
// tool.bin's executable bit.
func (e *mcpEnv) files(want map[string][]byte, toolExec bool) {
	e.t.Helper()
	for rel, w := range want {
		got, err := os.ReadFile(filepath.Join(e.ws, rel))
		switch {
		case w == nil && !os.IsNotExist(err):
			e.t.Fatalf("%s: got %q (err %v), want absent", rel, got, err)
		case w != nil && err != nil:
			e.t.Fatalf("%s: %v", rel, err)
		case w != nil && !bytes.Equal(got, w):
			e.t.Fatalf("%s: got %q, want %q", rel, got, w)
		}
	}
	fi, err := os.Stat(filepath.Join(e.ws, "tool.bin"))
	if err != nil {
		e.t.Fatal(err)
	}
	if got := fi.Mode()&0o100 != 0; got != toolExec {
		e.t.Fatalf("tool.bin mode %v: executable %v, want %v", fi.Mode(), got, toolExec)
	}
}

// mcpCmd is `ckpt mcp` for the env, run from inside the workspace as an
// agent would start it.
func (e *mcpEnv) mcpCmd(stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(e.bin, "mcp")
	cmd.Dir = e.ws
	cmd.Env = append(os.Environ(), "CKPT_HOME="+e.store, "CKPT_WORKSPACE=", "CKPT_SESSION=")
	cmd.Stderr = stderr
	return cmd
}

func TestMCPBinary(t *testing.T) {
	t.Parallel() // its own stores and workspaces; processes, not package state
	if testing.Short() {
		t.Skip("runs the real binary as a process")
	}
	bin := ckptBinary(t)
	t.Run("go_sdk_client", func(t *testing.T) { testMCPGoClient(t, newMCPEnv(t, bin)) })
	t.Run("stdout_is_jsonrpc_only", func(t *testing.T) { testMCPStdout(t, newMCPEnv(t, bin)) })
	t.Run("inspector_cli", func(t *testing.T) { testMCPInspector(t, newMCPEnv(t, bin)) })
	t.Run("claude_code_connects", func(t *testing.T) { testMCPClaude(t, newMCPEnv(t, bin)) })
}

// testMCPClaude registers `ckpt mcp` with the real Claude Code CLI, as the
// docs/mcp.md says, and has Claude check it: `claude mcp list` starts the server
// and reports it connected. HOME is a temp dir, so no real config is read
// or written.
func testMCPClaude(t *testing.T, e *mcpEnv) {
	// $CKPT_CLAUDE_BIN first, as the real-agent tests: .ci/run sets it
	// and puts no claude on $PATH.
	claude := os.Getenv("CKPT_CLAUDE_BIN")
	if claude == "" {
		var err error
		if claude, err = exec.LookPath("claude"); err != nil {
			t.Skip("Claude Code CLI not installed: set $CKPT_CLAUDE_BIN or put claude on $PATH (npm install @anthropic-ai/claude-code); .ci/run does")
		}
	}
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, claude, args...)
		cmd.Dir = e.ws
		cmd.Env = append(os.Environ(), "HOME="+home, "CKPT_HOME="+e.store, "DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_SESSION_ID=", "CLAUDE_PROJECT_DIR=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("mcp", "add", "ckpt", "--", e.bin, "mcp")
	out := run("mcp", "list")
	if !strings.Contains(out, "ckpt: "+e.bin+" mcp") || !strings.Contains(out, "Connected") {
		t.Fatalf("claude mcp list: %s; want ckpt connected", out)
	}
}

// mcpResult is the structured content of a rewind, undo or redo.
type mcpResult struct {
	Turn      int      `json:"turn"`
	Scope     string   `json:"scope"`
	Restored  []string `json:"restored"`
	Deleted   []string `json:"deleted"`
	Conflicts []string `json:"conflicts"`
	Prompt    string   `json:"prompt"`
	DryRun    bool     `json:"dry_run"`
	Changed   bool     `json:"changed"`
}

func testMCPGoClient(t *testing.T, e *mcpEnv) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	client := mcp.NewClient(&mcp.Implementation{Name: "ckpt-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: e.mcpCmd(&stderr)}, nil)
	if err != nil {
		t.Fatalf("connect: %v: %s", err, stderr.Bytes())
	}
	closed := false
	defer func() {
		if !closed {
			cs.Close()
		}
	}()
	if info := cs.InitializeResult(); info.ServerInfo.Name != "ckpt" || info.Instructions == "" {
		t.Errorf("server info %+v, instructions %q", info.ServerInfo, info.Instructions)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"history", "list_checkpoints", "redo", "rewind", "show_diff", "status", "undo"}; !slices.Equal(names, want) {
		t.Fatalf("tools: got %v, want %v", names, want)
	}

	call := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v: %s", name, err, stderr.Bytes())
		}
		if res.IsError {
			t.Fatalf("%s %v: tool error %v", name, args, res.Content)
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %s: %v", name, b, err)
		}
		return res
	}

	var list struct {
		Checkpoints []struct {
			Turn   int    `json:"turn"`
			Prompt string `json:"prompt"`
		} `json:"checkpoints"`
	}
	call("list_checkpoints", map[string]any{}, &list)
	if len(list.Checkpoints) != 3 || list.Checkpoints[2].Prompt != "shell" {
		t.Fatalf("list_checkpoints: got %+v, want the 3 turns", list.Checkpoints)
	}

	var r mcpResult
	call("rewind", map[string]any{"turn": 0, "scope": "code", "dry_run": true}, &r)
	if !r.DryRun || !slices.Equal(r.Restored, []string{"a.txt", "tool.bin"}) || !slices.Equal(r.Deleted, []string{"new.txt"}) {
		t.Fatalf("dry run: got %+v", r)
	}
	e.files(e.now, false) // a dry run changes nothing

	call("rewind", map[string]any{"turn": 0, "scope": "code"}, &r)
	if r.DryRun || !r.Changed {
		t.Fatalf("rewind: got %+v", r)
	}
	e.files(e.before, true)

	call("undo", map[string]any{}, &r)
	if !r.Changed || r.Turn != 0 {
		t.Fatalf("undo: got %+v", r)
	}
	e.files(e.now, false)

	// A conversation rewind, seen by the CLI in the same store.
	call("rewind", map[string]any{"turn": 1, "scope": "conversation"}, &r)
	if r.Prompt != "edit" {
		t.Fatalf("conversation rewind: prompt %q, want edit", r.Prompt)
	}
	var cliList []struct {
		Turn int `json:"turn"`
	}
	if err := json.Unmarshal([]byte(e.ckpt("list", "--json")), &cliList); err != nil || len(cliList) != 1 {
		t.Fatalf("ckpt list after the MCP rewind: %v, %d turns, want 1", err, len(cliList))
	}
	e.files(e.now, false)

	// The client hangs up: the server exits cleanly.
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v (stderr %s)", err, stderr.Bytes())
	}
	closed = true
	if !strings.Contains(stderr.String(), "serving session") {
		t.Errorf("stderr %q: want the serving line", stderr.String())
	}
	if strings.Contains(stderr.String(), "ckpt: ") && strings.Contains(stderr.String(), "error") {
		t.Errorf("stderr has an error: %s", stderr.String())
	}
}

// testMCPStdout speaks raw JSON-RPC to the server and checks that every
// line on stdout is a JSON-RPC 2.0 message answering a request, that a
// failing tool is a tool error and not a protocol error, and that the
// process exits 0 when stdin closes.
func testMCPStdout(t *testing.T, e *mcpEnv) {
	var stderr bytes.Buffer
	cmd := e.mcpCmd(&stderr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		done <- cmd.Wait()
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	type reply struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      *int            `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	recv := func(id int) reply {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed waiting for reply %d; stderr: %s", id, stderr.Bytes())
				}
				var r reply
				if err := json.Unmarshal([]byte(line), &r); err != nil || r.JSONRPC != "2.0" {
					t.Fatalf("stdout line is not JSON-RPC 2.0: %q (%v)", line, err)
				}
				if r.ID != nil && *r.ID == id {
					return r
				}
			case <-timeout:
				t.Fatalf("no reply %d; stderr: %s", id, stderr.Bytes())
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if r := recv(1); r.Error != nil || !bytes.Contains(r.Result, []byte(`"name":"ckpt"`)) {
		t.Fatalf("initialize: %s %s", r.Result, r.Error)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rewind","arguments":{"turn":99}}}`)
	r := recv(2)
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.Result, &res); r.Error != nil || err != nil || !res.IsError || len(res.Content) != 1 ||
		!strings.Contains(res.Content[0].Text, "no such turn") || strings.Contains(res.Content[0].Text, "\n") {
		t.Fatalf("rewind to a missing turn: result %s error %s, want a one-line tool error", r.Result, r.Error)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{}}}`)
	if r := recv(3); r.Error != nil || !bytes.Contains(r.Result, []byte(`"open_turn":2`)) {
		t.Fatalf("status: %s %s", r.Result, r.Error)
	}
	stdin.Close()
	select {
	case line, ok := <-lines:
		if ok {
			t.Fatalf("unexpected stdout after the last reply: %q", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("ckpt mcp did not exit after stdin closed")
	}
	if err := <-done; err != nil {
		t.Fatalf("ckpt mcp exit: %v; stderr: %s", err, stderr.Bytes())
	}
}

// inspector finds the MCP Inspector's launcher: $CKPT_MCP_INSPECTOR, then
// mcp-inspector on PATH. It returns a reason to skip when neither is there:
// go test installs nothing and reaches no network; .ci/run installs the
// pinned @modelcontextprotocol/inspector with npm and sets the variable.
func inspector() (string, string) {
	if p := os.Getenv("CKPT_MCP_INSPECTOR"); p != "" {
		return p, ""
	}
	if p, err := exec.LookPath("mcp-inspector"); err == nil {
		return p, ""
	}
	return "", "neither $CKPT_MCP_INSPECTOR nor mcp-inspector on $PATH"
}

// testMCPInspector drives `ckpt mcp` with the MCP Inspector's CLI mode:
// list the tools, rewind, and undo, checking the files on disk.
func testMCPInspector(t *testing.T, e *mcpEnv) {
	bin, why := inspector()
	if bin == "" {
		t.Skipf("MCP Inspector CLI unavailable: %s (set CKPT_MCP_INSPECTOR to its mcp-inspector launcher)", why)
	}
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The Inspector hands the server only a few environment
		// variables of its own choice: the store goes as a flag.
		all := append([]string{"--cli", e.bin, "--store", e.store, "mcp"}, args...)
		cmd := exec.CommandContext(ctx, bin, all...)
		cmd.Dir = e.ws
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mcp-inspector %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.Bytes())
		}
		return out
	}
	var tools struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(run("--method", "tools/list"), &tools); err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools/list: %v, %d tools, want 7", err, len(tools.Tools))
	}
	var res struct {
		IsError           bool      `json:"isError"`
		StructuredContent mcpResult `json:"structuredContent"`
	}
	out := run("--method", "tools/call", "--tool-name", "rewind", "--tool-arg", "turn=0", "--tool-arg", "scope=code", "--tool-arg", "dry_run=true")
	if err := json.Unmarshal(out, &res); err != nil || res.IsError || !res.StructuredContent.DryRun || !slices.Equal(res.StructuredContent.Deleted, []string{"new.txt"}) {
		t.Fatalf("rewind dry run: %v: %s", err, out)
	}
	e.files(e.now, false)
	out = run("--method", "tools/call", "--tool-name", "rewind", "--tool-arg", "turn=0", "--tool-arg", "scope=code")
	if err := json.Unmarshal(out, &res); err != nil || res.IsError || !res.StructuredContent.Changed {
		t.Fatalf("rewind: %v: %s", err, out)
	}
	e.files(e.before, true)
	out = run("--method", "tools/call", "--tool-name", "undo")
	if err := json.Unmarshal(out, &res); err != nil || res.IsError || !res.StructuredContent.Changed {
		t.Fatalf("undo: %v: %s", err, out)
	}
	e.files(e.now, false)
}

func TestMCPCommand(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	if code, _, stderr := ckptRun(t, ws, store, "mcp", "extra"); code != exitUsage || !strings.HasPrefix(stderr, "ckpt: mcp takes no arguments") {
		t.Errorf("mcp extra: exit %d, stderr %q; want a usage error", code, stderr)
	}
	// A client that hangs up at once: a clean exit, nothing on stdout.
	if code, _, stderr := ckptRun(t, ws, store, "turn", "t0"); code != exitOK {
		t.Fatalf("turn: %s", stderr)
	}
	code, stdout, stderr := ckptRun(t, ws, store, "mcp")
	if code != exitOK || stdout != "" || !strings.Contains(stderr, "serving session") {
		t.Errorf("mcp on empty stdin: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// mcpInProcess runs `ckpt ARGS` in process with a Go SDK client on its
// stdin and stdout, until the test ends.
func mcpInProcess(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), args, inR, outW, &stderr)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		if c := <-code; c != exitOK {
			t.Errorf("ckpt mcp exit %d: %s", c, stderr.String())
		}
	})
	return cs
}

func TestMCPClaudeSession(t *testing.T) {
	ws, store := t.TempDir(), t.TempDir()
	const claudeID = "0b6a8f2e-1c4d-4e5f-9a7b-2c3d4e5f6a7b"
	for _, args := range [][]string{{"turn", "in the default session"}, {"--session", claudeID, "turn", "in Claude's session"}} {
		if code, _, stderr := ckptRun(t, ws, store, args...); code != exitOK {
			t.Fatalf("ckpt %v: %s", args, stderr)
		}
	}
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CKPT_SESSION", "")
	t.Setenv("CKPT_WORKSPACE", "")
	t.Setenv("CLAUDE_PROJECT_DIR", ws)
	t.Chdir(sub)
	status := func(cs *mcp.ClientSession) (session, workspace, prompt string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "status", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("status: %v %+v", err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var st struct {
			Session    string `json:"session"`
			Workspace  string `json:"workspace"`
			OpenPrompt string `json:"open_prompt"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		return st.Session, st.Workspace, st.OpenPrompt
	}
	root, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("claude_session_exists", func(t *testing.T) {
		t.Setenv("CLAUDE_CODE_SESSION_ID", claudeID)
		s, w, p := status(mcpInProcess(t, "--store", store, "mcp"))
		if s != claudeID || w != root || p != "in Claude's session" {
			t.Fatalf("got session %q workspace %q prompt %q, want Claude's session in %s", s, w, p, root)
		}
	})
	t.Run("claude_session_new", func(t *testing.T) {
		t.Setenv("CLAUDE_CODE_SESSION_ID", "1b6a8f2e-1c4d-4e5f-9a7b-2c3d4e5f6a7b")
		s, w, _ := status(mcpInProcess(t, "--store", store, "mcp"))
		if s != "1b6a8f2e-1c4d-4e5f-9a7b-2c3d4e5f6a7b" || w != root {
			t.Fatalf("got session %q workspace %q, want the new Claude session in the project %s", s, w, root)
		}
	})
	t.Run("session_flag_wins", func(t *testing.T) {
		t.Setenv("CLAUDE_CODE_SESSION_ID", claudeID)
		def := controller.WorkspaceSession(root)
		s, _, p := status(mcpInProcess(t, "--store", store, "--session", def, "mcp"))
		if s != def || p != "in the default session" {
			t.Fatalf("got session %q prompt %q, want --session %s", s, p, def)
		}
	})
	t.Run("no_claude", func(t *testing.T) {
		// The workspace's most recently active session: Claude's,
		// which opened the last turn.
		t.Setenv("CLAUDE_CODE_SESSION_ID", "")
		s, w, p := status(mcpInProcess(t, "--store", store, "mcp"))
		if p != "in Claude's session" || w != root || s != claudeID {
			t.Fatalf("got session %q workspace %q prompt %q, want the last active session %s", s, w, p, claudeID)
		}
	})
}

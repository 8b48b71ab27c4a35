package agenttest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// acpClient speaks the Agent Client Protocol (JSON-RPC 2.0, one message a
// line) to an agent run with --acp: what an editor does, and the Cline
// CLI's one way to send several prompts to one session without a
// terminal (`cline PROMPT` starts a new session each time, and --id
// resumes one only interactively).
type acpClient struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Reader
	nextID int
}

// clineRunLabel labels the turn a Cline run opens (its hooks do not
// send the prompt).
const clineRunLabel = "(Cline run started: its hooks do not send the prompt)"

func (c *acpClient) send(msg map[string]any) {
	c.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, _ := json.Marshal(msg)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("acp: send: %v", err)
	}
}

// call sends a request and returns its result, answering the agent's own
// requests meanwhile: a permission request with its first "allow" option,
// anything else with an error (this client offers no file system or
// terminal).
func (c *acpClient) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"id": id, "method": method, "params": params})
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("acp: %s: no answer (%v)", method, err)
		}
		var m struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Params json.RawMessage  `json:"params"`
			Result json.RawMessage  `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch {
		case m.Method != "" && m.ID != nil:
			var reply map[string]any
			if m.Method == "session/request_permission" {
				var p struct {
					Options []struct {
						OptionID string `json:"optionId"`
						Kind     string `json:"kind"`
					} `json:"options"`
				}
				json.Unmarshal(m.Params, &p)
				for _, o := range p.Options {
					if strings.HasPrefix(o.Kind, "allow") {
						reply = map[string]any{"id": m.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}}}
						break
					}
				}
			}
			if reply == nil {
				reply = map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "not offered by this client"}}
			}
			c.send(reply)
		case m.Method == "" && m.ID != nil && string(*m.ID) == strconv.Itoa(id):
			if m.Error != nil {
				c.t.Fatalf("acp: %s: %s", method, m.Error.Message)
			}
			return m.Result
		}
	}
}

// stopClineHubs stops the hub daemons a Cline CLI run under home left
// behind (it detaches them from itself): each process, found in /proc,
// whose command line says it is one and whose $HOME is home, by its id.
func stopClineHubs(t *testing.T, home string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("--cline-hub-daemon")) {
			continue
		}
		environ, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !slices.ContainsFunc(bytes.Split(environ, []byte{0}), func(kv []byte) bool { return string(kv) == "HOME="+home }) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		p, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		t.Logf("stopping the Cline hub daemon, pid %d", pid)
		p.Kill()
		// Not our child: init reaps it once the kill lands.
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err != nil || len(b) == 0 {
				break
			}
		}
	}
}

// TestClineRealBinary drives the real Cline CLI, as an editor does over
// ACP (`cline --acp`), against a scripted Chat Completions server: three
// prompts in one session create files with apply_patch, edit one, and, by
// run_commands in scan mode, delete them, through the hook files `ckpt
// install cline` wrote to .clinerules/hooks; then every rewind scope and
// undo are checked byte for byte.
func TestClineRealBinary(t *testing.T) {
	t.Parallel()
	cline := harness.AgentBin(t, "CKPT_CLINE_BIN", "cline", "cline")
	ws, home, store := harness.TestDirs(t)
	t.Cleanup(func() { stopClineHubs(t, home) }) // after clineACP's

	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
	)
	prompts := map[string]int{p1: 1, p2: 2, p3: 3}
	var e *harness.Env
	// Cline runs the TaskStart hook (its agent_start) without waiting for
	// it; a real model answers later than that hook takes, so the
	// scripted one waits for the run's turn before its first answer.
	srv, err := fakemodel.NewOpenAIChatWaiting(map[string][]fakemodel.Step{
		p1: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: notes.txt\n+alpha\n+line two\n*** Add File: keep.txt\n+keep me\n*** End Patch\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+beta\n line two\n*** End Patch\n"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "run_commands", Input: map[string]any{"commands": []string{"rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt"}}},
			{Text: "Cleaned."},
		},
	}, func(prompt string, n int) {
		if n == 0 {
			e.WaitTurns(prompts[prompt], 2*time.Minute)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() }) // after clineACP's

	e = newClineEnv(t, cline, ws, home, store, srv)
	defer func() {
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	}()

	e.Ckpt("install", "cline")
	for _, name := range []string{"PreToolUse", "TaskStart"} {
		b, err := os.ReadFile(filepath.Join(ws, ".clinerules", "hooks", name))
		if err != nil || !strings.Contains(string(b), "exec ckpt hook cline\n") {
			t.Fatalf("%s after install: %s (%v)", name, b, err)
		}
	}

	prompt := clineACP(t, cline, e.Environ, ws)

	// Cline's apply_patch writes the last line without its newline.
	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two", "keep.txt": "keep me"}
	e.WantFiles("after prompt 1", afterP1)
	// The session is the hooks' taskId (Cline's conversation id).
	sid := e.OnlySession()
	if !strings.HasPrefix(sid, "conv_") {
		t.Errorf("session %q is not a Cline conversation id", sid)
	}
	e.Ckpt("--session", sid, "scan", "on")
	prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two", "keep.txt": "keep me"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// A turn per run, each labelled with its prompt (which the CLI's
	// hooks do not send: ckpt reads it from the CLI's session files) and
	// with the paths its patch named.
	e.WantTurns(sid, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified", p3+":")
	if log := e.Ckpt("--session", sid, "log"); !strings.Contains(log, p1) || !strings.Contains(log, p3) || strings.Contains(log, clineRunLabel) {
		t.Errorf("ckpt log, want the prompts:\n%s", log)
	}

	for _, tc := range []harness.RewindWant{{Turn: "2", Want: afterP2}, {Turn: "1", Want: afterP1}, {Turn: "0", Want: map[string]string{}}} {
		e.Ckpt("--session", sid, "rewind", tc.Turn, "--scope", "code")
		e.WantFiles("rewind "+tc.Turn+" --scope code", tc.Want)
		e.Ckpt("--session", sid, "undo")
		e.WantFiles("undo of rewind "+tc.Turn+" --scope code", after)
	}

	// The conversation, then both, back to turn 1, and undo of each.
	logTurns := func() string {
		var log []struct {
			Turn int `json:"turn"`
		}
		if err := json.Unmarshal([]byte(e.Ckpt("--session", sid, "log", "--json")), &log); err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		var turns []string
		for _, m := range log {
			if !seen[m.Turn] {
				seen[m.Turn] = true
				turns = append(turns, strconv.Itoa(m.Turn))
			}
		}
		return strings.Join(turns, ",")
	}
	if got := logTurns(); got != "0,1,2" {
		t.Fatalf("log turns %s, want 0,1,2", got)
	}
	for _, scope := range []string{"conversation", "both"} {
		var rj struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal([]byte(e.Ckpt("--session", sid, "rewind", "1", "--scope", scope, "--json")), &rj); err != nil {
			t.Fatal(err)
		}
		if rj.Prompt != p2 {
			t.Errorf("rewind 1 --scope %s: prompt %q, want %q", scope, rj.Prompt, p2)
		}
		if got := logTurns(); got != "0" {
			t.Errorf("rewind 1 --scope %s: log turns %s, want 0", scope, got)
		}
		if scope == "both" {
			e.WantFiles("rewind 1 --scope both", afterP1)
		} else {
			e.WantFiles("rewind 1 --scope conversation", after)
		}
		e.Ckpt("--session", sid, "undo")
		if got := logTurns(); got != "0,1,2" {
			t.Errorf("undo of rewind 1 --scope %s: log turns %s, want 0,1,2", scope, got)
		}
		e.WantFiles("undo of rewind 1 --scope "+scope, after)
	}
}

// newClineEnv is the environment the real Cline CLI runs in, with its own
// HOME under home, its provider pointed at srv (cline auth), and ckpt's
// store: the local session backend, so no hub daemon, which Cline
// otherwise starts detached, some seconds in (stopClineHubs stops any all
// the same). The key and model make an ACP session ready.
func newClineEnv(t *testing.T, cline, ws, home, store string, srv *fakemodel.Server) *harness.Env {
	t.Helper()
	env := harness.IsolatedEnv([]string{"CLINE_"}, "HOME="+home, "CKPT_HOME="+store,
		"CLINE_SESSION_BACKEND_MODE=local", "CLINE_NO_AUTO_UPDATE=1",
		"CLINE_API_KEY=sk-test", "CLINE_PROVIDER=openai-compatible", "CLINE_MODEL=gpt-4.1")
	e := &harness.Env{T: t, WS: ws, Store: store, Environ: env}
	ver, _, _ := e.Run(ws, nil, cline, "--version")
	t.Logf("cline --version: %s", strings.TrimSpace(ver))
	if out, errOut, err := e.Run(ws, nil, cline, "auth", "-p", "openai", "-k", "sk-test", "-m", "gpt-4.1", "-b", srv.URL+"/v1"); err != nil {
		t.Fatalf("cline auth: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	return e
}

// clineACP starts the real Cline CLI over ACP in dir, with env, opens one
// session there and returns a function that sends it a prompt and waits
// for the answer. The CLI stops when the test ends.
func clineACP(t *testing.T, cline string, env []string, dir string) func(string) {
	t.Helper()
	ctx, cancel := harness.SessionContext(t)
	cmd := exec.CommandContext(ctx, cline, "-c", dir, "--auto-approve", "true", "--acp")
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), env...), "PWD="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 5 * time.Second
	killGroup := harness.OwnProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil && !t.Failed() {
			t.Errorf("cline --acp: %v\nstderr: %s", err, stderr.String())
		}
		killGroup()
		cancel()
		if t.Failed() {
			t.Logf("cline --acp stderr:\n%s", stderr.String())
		}
	})
	acp := &acpClient{t: t, in: in, out: bufio.NewReader(out)}
	acp.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
		"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false}})
	var session struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(acp.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}), &session)
	return func(p string) {
		t.Helper()
		var res struct {
			StopReason string `json:"stopReason"`
		}
		json.Unmarshal(acp.call("session/prompt", map[string]any{"sessionId": session.SessionID,
			"prompt": []any{map[string]any{"type": "text", "text": p}}}), &res)
		if res.StopReason != "end_turn" {
			t.Fatalf("prompt %q: stop reason %q", p, res.StopReason)
		}
	}
}

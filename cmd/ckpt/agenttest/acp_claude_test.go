package agenttest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestACPClaudeRealBinary runs Zed's Claude ACP agent
// (@zed-industries/claude-agent-acp, Claude Code through the Claude Agent
// SDK) behind `ckpt acp`, against the scripted Anthropic Messages API, as
// an editor would: Claude writes its files and runs its shell itself, so
// the scans of each prompt's turn are what ckpt rewinds. /rewind to every
// turn, /undo and /redo are answered by ckpt, byte for byte; a prompt in
// a session the agent does not know gets the agent's own error back, and
// a cancellation reaches the agent. Claude forks its session
// (session/fork): ckpt records the fork as a ckpt fork whose parent is
// the session at its last turn, shown by `ckpt sessions --tree`, which rewinds
// the turns it took over and its own.
func TestACPClaudeRealBinary(t *testing.T) {
	t.Parallel()
	bin := harness.AgentBin(t, "CKPT_CLAUDE_ACP_BIN", "claude-agent-acp", "@zed-industries/claude-agent-acp")
	ws, home, store := harness.TestDirs(t)
	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
		p4 = "in the fork, edit the shell's file"
		p5 = "wait for a cancellation"
	)
	notes, shell := filepath.Join(ws, "notes.txt"), filepath.Join(ws, "shell.txt")
	srv, err := fakemodel.NewAnthropic(map[string][]fakemodel.Step{
		p1: {
			{Tool: "Write", Input: map[string]any{"file_path": notes, "content": "alpha\nline two\n"}},
			{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "keep.txt"), "content": "keep me\r\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "Read", Input: map[string]any{"file_path": notes}},
			{Tool: "Edit", Input: map[string]any{"file_path": notes, "old_string": "alpha", "new_string": "beta"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "Bash", Input: map[string]any{"command": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt", "description": "clean up"}},
			{Text: "Cleaned."},
		},
		p4: {
			{Tool: "Read", Input: map[string]any{"file_path": shell}},
			{Tool: "Edit", Input: map[string]any{"file_path": shell, "old_string": "by shell", "new_string": "by the fork"}},
			{Text: "Edited in the fork."},
		},
		p5: {
			{Tool: "Bash", Input: map[string]any{"command": "sleep 60", "description": "wait"}},
			{Text: "Not cancelled."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	})
	env := claudeEnv(home, store, srv.URL)
	if os.Geteuid() == 0 {
		// The agent starts Claude Code with
		// --allow-dangerously-skip-permissions, which Claude Code refuses
		// to run as root ("cannot be used with root/sudo privileges")
		// unless it is told it runs in a sandbox, as a CI container is.
		env = append(env, "IS_SANDBOX=1")
	}
	e := &harness.Env{T: t, WS: ws, Store: store, Environ: env, Timeout: 2 * time.Minute}
	c, sid := harness.StartACP(t, e, "", bin)
	prompt := func(sid, p string) string { return harness.ACPPrompt(t, c, sid, p) }

	prompt(sid, p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	prompt(sid, p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(sid, p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)
	// One turn per prompt, in the ckpt session named after Claude's; what
	// Claude wrote itself is in the turns' scans.
	e.WantTurns(sid,
		p1+": keep.txt=created notes.txt=created",
		p2+": notes.txt=modified",
		p3+":",
	)
	for _, tc := range []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	} {
		said := prompt(sid, "/rewind "+tc.Turn)
		e.WantFiles("/rewind "+tc.Turn+" ("+said+")", tc.Want)
		said = prompt(sid, "/undo")
		e.WantFiles("/undo of /rewind "+tc.Turn+" ("+said+")", after)
	}
	prompt(sid, "/rewind 1")
	prompt(sid, "/undo")
	prompt(sid, "/redo")
	e.WantFiles("/redo", afterP1)
	prompt(sid, "/undo")
	e.WantFiles("/undo after /redo", after)

	// The agent's own error comes back: a session it does not know.
	if resp, _ := c.Request("session/prompt", map[string]any{"sessionId": "no-such-session",
		"prompt": []map[string]any{{"type": "text", "text": "hello"}}}); !strings.Contains(resp, `"error"`) || !strings.Contains(resp, "Session not found") {
		t.Errorf("prompt in an unknown session: %s", resp)
	}

	// Claude forks its session as it stands: a ckpt fork after turn 2.
	resp, _ := c.Request("session/fork", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}})
	fork := jsonField(t, resp, "sessionId")
	prompt(fork, p4)
	afterFork := map[string]string{"shell.txt": "by the fork\n"}
	e.WantFiles("after the fork's prompt", afterFork)
	// The fork's turn 3 closed its turn 2, whose scan shows what the shell
	// did; the source's turn 2 is still open.
	e.WantTurns(fork,
		p1+": keep.txt=created notes.txt=created",
		p2+": notes.txt=modified",
		p3+": keep.txt=deleted notes.txt=deleted shell.txt=created",
		p4+":",
	)
	e.WantTurns(sid,
		p1+": keep.txt=created notes.txt=created",
		p2+": notes.txt=modified",
		p3+":",
	)
	sessions := e.Ckpt("sessions", "--tree")
	if !strings.Contains(sessions, "\n"+sid+" ") || !strings.Contains(sessions, "\n└─ "+fork+" (turn 3) ") {
		t.Errorf("ckpt sessions shows no fork of %s at turn 3 named %s:\n%s", sid, fork, sessions)
	}
	for _, tc := range []harness.RewindWant{
		{Turn: "3", Want: after},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	} {
		said := prompt(fork, "/rewind "+tc.Turn)
		e.WantFiles("/rewind "+tc.Turn+" in the fork ("+said+")", tc.Want)
		said = prompt(fork, "/undo")
		e.WantFiles("/undo of /rewind "+tc.Turn+" in the fork ("+said+")", afterFork)
	}

	// A cancellation reaches the agent, which stops the prompt as
	// cancelled; the session goes on.
	c.Next++
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, c.Next, sid, p5))
	c.Send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid))
	if resp, _ = c.Until(fmt.Sprint(c.Next)); !strings.Contains(resp, `"stopReason":"cancelled"`) {
		t.Errorf("cancelled prompt's answer: %s", resp)
	}
	if said := prompt(sid, "/checkpoints"); !strings.Contains(said, "turn 3") || !strings.Contains(said, p5) {
		t.Errorf("/checkpoints after the cancelled prompt:\n%s", said)
	}
}

// jsonField is the string field name of a JSON-RPC response's result; it
// fails the test on an error response.
func jsonField(t *testing.T, resp, name string) string {
	t.Helper()
	var r struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatalf("%v: %s", err, resp)
	}
	s, _ := r.Result[name].(string)
	if s == "" {
		t.Fatalf("no %s in %s", name, resp)
	}
	return s
}

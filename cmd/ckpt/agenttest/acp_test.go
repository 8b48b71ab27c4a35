package agenttest_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/acptest"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestACPGeminiRealBinary runs the real Gemini CLI in ACP mode
// (`gemini --acp`) behind `ckpt acp`, against a scripted Gemini API
// server, with a scripted editor: Gemini writes files through the editor
// (fs/write_text_file, captured first, a step per tool call) and runs its
// shell itself (covered by the scan of each prompt's turn). /rewind to
// every turn and step, /undo and /redo are answered by ckpt, byte for
// byte; a conversation rewind is said to be unsupported.
func TestACPGeminiRealBinary(t *testing.T) {
	gemini := agentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
	ws, home, store := agentTestDirs(t)
	p1, p2, p3, srv := geminiNotesServer(t, ws)
	g := newGeminiRun(t, ws, home, store, srv, true)
	e := g.e
	t.Logf("gemini --version: %s", g.version())

	c, sid := startACP(t, e, "gemini-api-key", gemini, "--acp")

	prompt := func(p string) string { return acpPrompt(t, c, sid, p) }
	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.wantFiles("after prompt 1", afterP1)
	prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.wantFiles("after prompt 2", afterP2)
	prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.wantFiles("after prompt 3", after)

	// One turn per prompt, in the ckpt session named after Gemini's; the
	// shell's changes are in the turns' manifests.
	e.wantTurns(sid,
		p1+": keep.txt=created notes.txt=created",
		p2+": notes.txt=modified",
		p3+":",
	)
	if said := prompt("/checkpoints"); !strings.Contains(said, "turn 2") || !strings.Contains(said, "step 0.2") {
		t.Errorf("/checkpoints says:\n%s", said)
	}
	for _, tc := range []rewindWant{
		{"2", afterP2},
		{"1", afterP1},
		{"0.2", map[string]string{"notes.txt": "alpha\nline two\n"}},
		{"0", map[string]string{}},
	} {
		said := prompt("/rewind " + tc.turn)
		e.wantFiles("/rewind "+tc.turn+" ("+said+")", tc.want)
		said = prompt("/undo")
		e.wantFiles("/undo of /rewind "+tc.turn+" ("+said+")", after)
	}
	prompt("/rewind 1")
	prompt("/undo")
	prompt("/redo")
	e.wantFiles("/redo", afterP1)
	prompt("/undo")
	e.wantFiles("/undo after /redo", after)
	if said := prompt("/rewind 1 conversation"); !strings.Contains(said, "Nothing was changed") {
		t.Errorf("/rewind 1 conversation says %q", said)
	}
	e.wantFiles("/rewind 1 conversation", after)
}

// TestACPCodexRealBinary runs Zed's Codex ACP agent
// (@zed-industries/codex-acp) behind `ckpt acp` against the scripted
// Responses API: Codex applies its patches and runs its shell itself, so
// the turn scans are what ckpt rewinds; /rewind to every turn and /undo
// are checked byte for byte.
func TestACPCodexRealBinary(t *testing.T) {
	codexACP := agentBin(t, "CKPT_CODEX_ACP_BIN", "codex-acp", "@zed-industries/codex-acp")
	ws, home, store := agentTestDirs(t)
	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
	)
	srv, err := fakemodel.NewResponses(map[string][]fakemodel.Step{
		p1: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: notes.txt\n+alpha\n+line two\n*** Add File: keep.txt\n+keep me\n*** End Patch\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+beta\n line two\n*** End Patch\n"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "exec_command", Input: map[string]any{"cmd": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt"}},
			{Text: "Cleaned."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newCodexRun(t, ws, home, store, srv, true).e
	// As `codex exec --dangerously-bypass-approvals-and-sandbox` in
	// TestCodexRealBinary: the test machine has no bubblewrap.
	c, sid := startACP(t, e, "", codexACP, "-c", `sandbox_mode="danger-full-access"`)
	prompt := func(p string) string { return acpPrompt(t, c, sid, p) }
	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\n"}
	e.wantFiles("after prompt 1", afterP1)
	prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\n"}
	e.wantFiles("after prompt 2", afterP2)
	prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.wantFiles("after prompt 3", after)
	for _, tc := range []rewindWant{
		{"2", afterP2},
		{"1", afterP1},
		{"0", map[string]string{}},
	} {
		said := prompt("/rewind " + tc.turn)
		e.wantFiles("/rewind "+tc.turn+" ("+said+")", tc.want)
		said = prompt("/undo")
		e.wantFiles("/undo of /rewind "+tc.turn+" ("+said+")", after)
	}
}

// startACP starts `ckpt acp -- agent...` in e's workspace and environment
// (stopped when the test ends), initializes it as an editor offering file
// reads and writes, authenticates with method auth unless it is "", and
// opens a session in the workspace: the client and the session.
func startACP(t *testing.T, e *agentEnv, auth string, agent ...string) (*acptest.Client, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, ckptBinary(t), append([]string{"acp", "--"}, agent...)...)
	cmd.Dir = e.ws
	cmd.Env = append(append([]string(nil), e.env...), "PWD="+e.ws)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	killGroup := ownProcessGroup(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The client hangs up; an agent that does not exit on that
		// (codex-acp) is stopped.
		in.Close()
		stop := time.AfterFunc(10*time.Second, cancel)
		cmd.Wait()
		stop.Stop()
		killGroup()
		if t.Failed() {
			t.Logf("ckpt acp stderr:\n%s", stderr.String())
		}
	})
	c := acptest.New(t, in, out)
	resp, _ := c.Request("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": false}})
	var init struct {
		Result struct {
			ProtocolVersion int             `json:"protocolVersion"`
			AgentInfo       json.RawMessage `json:"agentInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &init); err != nil || init.Result.ProtocolVersion != 1 {
		t.Fatalf("initialize: %s", resp)
	}
	t.Logf("ACP agent: %s", init.Result.AgentInfo)
	if auth != "" {
		if resp, _ = c.Request("authenticate", map[string]any{"methodId": auth}); strings.Contains(resp, `"error"`) {
			t.Fatalf("authenticate %s: %s", auth, resp)
		}
	}
	resp, _ = c.Request("session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}})
	var sn struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(resp), &sn); err != nil || sn.Result.SessionID == "" {
		t.Fatalf("session/new: %s", resp)
	}
	return c, sn.Result.SessionID
}

// acpPrompt sends prompt p and wants it to end its turn; it returns what
// the agent (or ckpt) said.
func acpPrompt(t *testing.T, c *acptest.Client, sid, p string) string {
	t.Helper()
	resp, said := c.Prompt(sid, p)
	if !strings.Contains(resp, `"stopReason":"end_turn"`) {
		t.Fatalf("prompt %q: %s (said %q)", p, resp, said)
	}
	return said
}

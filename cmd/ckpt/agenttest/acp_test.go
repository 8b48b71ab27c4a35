package agenttest_test

import (
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
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
	t.Parallel()
	gemini := harness.AgentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
	ws, home, store := harness.TestDirs(t)
	p1, p2, p3, srv := geminiNotesServer(t, ws)
	g := newGeminiRun(t, ws, home, store, srv, true)
	e := g.e
	t.Logf("gemini --version: %s", g.version())

	c, sid := harness.StartACP(t, e, "gemini-api-key", gemini, "--acp")

	prompt := func(p string) string { return harness.ACPPrompt(t, c, sid, p) }
	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// One turn per prompt, in the ckpt session named after Gemini's; the
	// shell's changes are in the turns' manifests.
	e.WantTurns(sid,
		p1+": keep.txt=created notes.txt=created",
		p2+": notes.txt=modified",
		p3+":",
	)
	if said := prompt("/checkpoints"); !strings.Contains(said, "turn 2") || !strings.Contains(said, "step 0.2") {
		t.Errorf("/checkpoints says:\n%s", said)
	}
	for _, tc := range []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0.2", Want: map[string]string{"notes.txt": "alpha\nline two\n"}},
		{Turn: "0", Want: map[string]string{}},
	} {
		said := prompt("/rewind " + tc.Turn)
		e.WantFiles("/rewind "+tc.Turn+" ("+said+")", tc.Want)
		said = prompt("/undo")
		e.WantFiles("/undo of /rewind "+tc.Turn+" ("+said+")", after)
	}
	prompt("/rewind 1")
	prompt("/undo")
	prompt("/redo")
	e.WantFiles("/redo", afterP1)
	prompt("/undo")
	e.WantFiles("/undo after /redo", after)
	if said := prompt("/rewind 1 conversation"); !strings.Contains(said, "Nothing was changed") {
		t.Errorf("/rewind 1 conversation says %q", said)
	}
	e.WantFiles("/rewind 1 conversation", after)
}

// TestACPCodexRealBinary runs Zed's Codex ACP agent
// (@zed-industries/codex-acp) behind `ckpt acp` against the scripted
// Responses API: Codex applies its patches and runs its shell itself, so
// the turn scans are what ckpt rewinds; /rewind to every turn and /undo
// are checked byte for byte.
func TestACPCodexRealBinary(t *testing.T) {
	t.Parallel()
	codexACP := harness.AgentBin(t, "CKPT_CODEX_ACP_BIN", "codex-acp", "@zed-industries/codex-acp")
	ws, home, store := harness.TestDirs(t)
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
	c, sid := harness.StartACP(t, e, "", codexACP, "-c", `sandbox_mode="danger-full-access"`)
	prompt := func(p string) string { return harness.ACPPrompt(t, c, sid, p) }
	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\n"}
	e.WantFiles("after prompt 1", afterP1)
	prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\n"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)
	for _, tc := range []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	} {
		said := prompt("/rewind " + tc.Turn)
		e.WantFiles("/rewind "+tc.Turn+" ("+said+")", tc.Want)
		said = prompt("/undo")
		e.WantFiles("/undo of /rewind "+tc.Turn+" ("+said+")", after)
	}
}

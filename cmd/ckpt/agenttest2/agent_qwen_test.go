package agenttest2_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestQwenRealBinary drives the real Qwen Code CLI (`qwen -p`) against a
// scripted Chat Completions server (its OpenAI-compatible auth): three
// prompts create files with write_file, edit one with edit, and delete
// them with run_shell_command in scan mode, through the hooks `ckpt
// install qwen` wrote to .qwen/settings.json; then every rewind scope and
// undo are checked byte for byte. Qwen Code sends UserPromptSubmit again
// for each request that carries tool results: still one turn per prompt.
func TestQwenRealBinary(t *testing.T) {
	t.Parallel()
	qwen, e := newQwenRun(t)
	defer e.KeepGit()()
	p1, p2, p3 := qwenPrompts()
	ws := e.WS

	e.Ckpt("install", "qwen")
	if b, err := os.ReadFile(filepath.Join(ws, ".qwen", "settings.json")); err != nil || !strings.Contains(string(b), `"command": "ckpt hook qwen"`) {
		t.Fatalf("settings after install: %s (%v)", b, err)
	}
	// The session is named up front, so scan mode is on before its first
	// prompt; later prompts resume it.
	const sid = "6c1f9a2e-4b7d-4e3a-8f50-2d9c8b7a6e51"
	e.Ckpt("--session", sid, "scan", "on")
	prompt := func(p string, args ...string) {
		t.Helper()
		full := append([]string{"-p", p, "--approval-mode", "yolo"}, args...)
		out, errOut, err := e.Run(ws, nil, qwen, full...)
		if err != nil {
			t.Fatalf("qwen %s: %v\nstdout: %s\nstderr: %s", strings.Join(full, " "), err, out, errOut)
		}
	}
	prompt(p1, "--session-id", sid)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	prompt(p2, "--resume", sid)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(p3, "--resume", sid)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	e.WantTurns(sid,
		p1+": keep.txt=created notes.txt=created",
		p2+": notes.txt=modified",
		p3+":",
	)

	e.CheckRewinds(sid, []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	}, "1", p2, after)
}

// TestACPQwenRealBinary runs Qwen Code in its ACP mode (`qwen --acp`)
// behind `ckpt acp`, with no hooks installed, as an editor would: the
// scripted client prompts the create / edit / shell-delete scenario, and
// /rewind to every turn and step, /undo and /redo are checked byte for
// byte.
func TestACPQwenRealBinary(t *testing.T) {
	t.Parallel()
	qwen, e := newQwenRun(t)
	defer e.KeepGit()()
	p1, p2, p3 := qwenPrompts()
	c, sid := harness.StartACP(t, e, "", qwen, "--acp")
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

	// One turn per prompt, in the ckpt session named after Qwen's; its
	// writes through the editor are steps, the shell's changes in the
	// turns' scans.
	e.WantTurns(sid,
		p1+": keep.txt=created notes.txt=created",
		p2+": notes.txt=modified",
		p3+":",
	)
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
}

// qwenPrompts are the three prompts the scripted server of newQwenRun
// answers.
func qwenPrompts() (p1, p2, p3 string) {
	return "create the notes", "edit the notes", "clean up with the shell"
}

// newQwenRun sets up the Qwen Code CLI in a new home to use a scripted
// Chat Completions server (closed when the test ends) through its
// OpenAI-compatible auth: p1 writes notes.txt and keep.txt with
// write_file, p2 reads and edits notes.txt, p3 deletes both and writes
// shell.txt by run_shell_command.
func newQwenRun(t *testing.T) (qwen string, e *harness.Env) {
	t.Helper()
	qwen = harness.AgentBin(t, "CKPT_QWEN_BIN", "qwen", "@qwen-code/qwen-code")
	ws, home, store := harness.TestDirs(t)
	p1, p2, p3 := qwenPrompts()
	notes := filepath.Join(ws, "notes.txt")
	srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{
		p1: {
			{Tool: "write_file", Input: map[string]any{"file_path": notes, "content": "alpha\nline two\n"}},
			{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(ws, "keep.txt"), "content": "keep me\r\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "read_file", Input: map[string]any{"file_path": notes}},
			{Tool: "edit", Input: map[string]any{"file_path": notes, "old_string": "alpha", "new_string": "beta"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "run_shell_command", Input: map[string]any{"command": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt", "description": "clean up"}},
			{Text: "Cleaned."},
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
	e = newQwenEnv(t, ws, home, store, srv)
	e.LogVersionIfFailed(qwen)
	return qwen, e
}

// newQwenEnv is the environment of the Qwen Code CLI in workspace ws with
// a new home: srv, a scripted Chat Completions server, through its
// OpenAI-compatible auth, and ckpt's store.
func newQwenEnv(t *testing.T, ws, home, store string, srv *fakemodel.Server) *harness.Env {
	t.Helper()
	// OpenAI-compatible auth from the user's settings and the environment;
	// no usage statistics, which Qwen Code sends to its servers.
	settings := filepath.Join(home, ".qwen", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "openai"}}, "privacy": {"usageStatisticsEnabled": false}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := harness.IsolatedEnv([]string{"QWEN_", "OPENAI_", "DASHSCOPE_"},
		"HOME="+home, "CKPT_HOME="+store, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-test",
		"OPENAI_MODEL=gpt-4.1", "QWEN_CODE_SUPPRESS_YOLO_WARNING=1")
	return &harness.Env{T: t, WS: ws, Store: store, Environ: env, Timeout: 5 * time.Minute}
}

package agenttest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestGeminiRealBinary drives the real Gemini CLI (`gemini -p`) against a
// scripted Gemini API server: three prompts create files with write_file,
// edit one with replace, and delete them with run_shell_command in scan
// mode, through the hooks `ckpt install gemini` wrote; then every rewind
// scope and undo are checked byte for byte.
func TestGeminiRealBinary(t *testing.T) {
	t.Parallel()
	harness.AgentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
	ws, home, store := harness.TestDirs(t)

	p1, p2, p3, srv := geminiNotesServer(t, ws)
	g := newGeminiRun(t, ws, home, store, srv, true)
	e := g.e
	t.Logf("gemini --version: %s", g.version())
	e.Ckpt("install", "gemini")
	if b, err := os.ReadFile(filepath.Join(ws, ".gemini", "settings.json")); err != nil || !strings.Contains(string(b), `"command": "ckpt hook gemini"`) {
		t.Fatalf("settings after install: %s (%v)", b, err)
	}
	// The session is named up front, so scan mode is on before its first
	// prompt; later prompts resume it.
	const sid = "3f2b8c1e-7d4a-4e59-9b60-1a2c3d4e5f60"
	e.Ckpt("--session", sid, "scan", "on")
	g.prompt(p1, "--session-id", sid)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	g.prompt(p2, "--resume", sid)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 2", afterP2)
	g.prompt(p3, "--resume", sid)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// One turn per prompt (BeforeAgent), each with what its file tools
	// wrote; the shell's changes are in the turn's manifest.
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

// geminiRun is the Gemini CLI in a test.
type geminiRun struct {
	e      *harness.Env
	gemini string
}

// newGeminiRun sets up the Gemini CLI in home to use srv, the scripted
// Gemini API server (closed when the test ends), with API-key auth. With
// trustWorkspace the workspace is trusted through the environment: Gemini
// loads a project's hooks only in a trusted folder, and --skip-trust does
// not make it load them. Gemini does not relaunch itself in a second Node
// process: half the start-up time.
func newGeminiRun(t *testing.T, ws, home, store string, srv *fakemodel.Server, trustWorkspace bool) *geminiRun {
	t.Helper()
	gemini := harness.AgentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	})
	settings := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := harness.IsolatedEnv([]string{"GEMINI_", "GOOGLE_"},
		"HOME="+home, "GEMINI_CLI_HOME="+home, "CKPT_HOME="+store,
		"GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_API_KEY=test-key", "GEMINI_CLI_NO_RELAUNCH=true")
	if trustWorkspace {
		env = append(env, "GEMINI_CLI_TRUST_WORKSPACE=true")
	}
	g := &geminiRun{e: &harness.Env{T: t, WS: ws, Store: store, Environ: env}, gemini: gemini}
	return g
}

// prompt runs `gemini -p p` in yolo mode with args.
func (g *geminiRun) prompt(p string, args ...string) {
	t := g.e.T
	t.Helper()
	full := append([]string{"-p", p, "--approval-mode", "yolo"}, args...)
	out, errOut, err := g.e.Run(g.e.WS, nil, g.gemini, full...)
	if err != nil {
		t.Fatalf("gemini %s: %v\nstdout: %s\nstderr: %s", strings.Join(full, " "), err, out, errOut)
	}
}

// TestGeminiRealBinaryUserHooks: `ckpt install gemini --user` merges its
// hooks into ~/.gemini/settings.json, which the real Gemini CLI runs in a
// workspace trusted only for the run (--skip-trust).
func TestGeminiRealBinaryUserHooks(t *testing.T) {
	t.Parallel()
	harness.AgentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
	ws, home, store := harness.TestDirs(t)
	const p1 = "create the notes"
	srv, err := fakemodel.NewGemini(map[string][]fakemodel.Step{
		p1: {
			{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "alpha\n"}},
			{Text: "Created."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := newGeminiRun(t, ws, home, store, srv, false)
	g.e.Ckpt("install", "gemini", "--user")
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	if err != nil || !strings.Contains(string(b), `"selectedType": "gemini-api-key"`) || !strings.Contains(string(b), `"command": "ckpt hook gemini"`) {
		t.Fatalf("user settings after install --user: %s (%v)", b, err)
	}
	const sid = "0b7d3e2a-5c4f-4a1b-8e9d-6f5a4b3c2d1e"
	g.prompt(p1, "--session-id", sid, "--skip-trust")
	g.e.WantFiles("after prompt 1", map[string]string{"notes.txt": "alpha\n"})
	g.e.WantTurns(sid, p1+": notes.txt=created")
}

// version runs `gemini --version`, for the log.
func (g *geminiRun) version() string {
	out, _, _ := g.e.Run(g.e.WS, nil, g.gemini, "--version")
	return strings.TrimSpace(out)
}

// geminiNotesServer is the scripted Gemini API of the three-prompt runs:
// p1 writes notes.txt and keep.txt in ws, p2 edits notes.txt with replace,
// p3 deletes both and writes shell.txt through run_shell_command.
func geminiNotesServer(t *testing.T, ws string) (p1, p2, p3 string, srv *fakemodel.Server) {
	t.Helper()
	p1, p2, p3 = "create the notes", "edit the notes", "clean up with the shell"
	srv, err := fakemodel.NewGemini(map[string][]fakemodel.Step{
		p1: {
			{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "alpha\nline two\n"}},
			{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(ws, "keep.txt"), "content": "keep me\r\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "replace", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "instruction": "rename alpha",
				"old_string": "alpha", "new_string": "beta"}},
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
	return p1, p2, p3, srv
}

package agenttest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestCodexRealBinary drives the real Codex CLI (`codex exec`) against a
// scripted Responses API server: three prompts create files with
// apply_patch, edit and move one with apply_patch, and delete them with its
// shell in scan mode, through the hooks `ckpt install codex` wrote; then
// every rewind scope and undo are checked byte for byte.
func TestCodexRealBinary(t *testing.T) {
	t.Parallel()
	harness.AgentBin(t, "CKPT_CODEX_BIN", "codex", "@openai/codex")
	ws, home, store := harness.TestDirs(t)

	const (
		p1 = "create the notes"
		p2 = "edit the notes and move keep"
		p3 = "clean up with the shell"
	)
	srv, err := fakemodel.NewResponses(map[string][]fakemodel.Step{
		p1: {
			// A relative and an absolute path (models write both).
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: notes.txt\n+alpha\n+line two\n*** Add File: " + filepath.Join(ws, "keep.txt") + "\n+keep me\n*** End Patch\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+beta\n line two\n*** Update File: keep.txt\n*** Move to: sub/kept.txt\n@@\n-keep me\n+kept\n*** End Patch\n"}},
			// The same tool through the shell: Codex applies it, and its
			// hook names the shell with the patch in the command.
			{Tool: "exec_command", Input: map[string]any{"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: extra.txt\n+extra\n*** End Patch\nEOF"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "exec_command", Input: map[string]any{"cmd": "rm notes.txt sub/kept.txt extra.txt && printf 'by shell\\n' > shell.txt"}},
			{Text: "Cleaned."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newCodexRun(t, ws, home, store, srv, true)
	e, prompt := c.e, c.prompt
	t.Logf("codex --version: %s", c.version())

	e.Ckpt("install", "codex")
	hooks, err := os.ReadFile(filepath.Join(ws, ".codex", "hooks.json"))
	if err != nil || !strings.Contains(string(hooks), `"command": "ckpt hook codex"`) {
		t.Fatalf("hooks.json after install: %s (%v)", hooks, err)
	}

	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\n"}
	e.WantFiles("after prompt 1", afterP1)
	// Scan mode for the session from its second turn on: the shell's
	// deletions in prompt 3 rewind too.
	sid := c.sid
	e.Ckpt("--session", sid, "scan", "on")
	prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "sub/kept.txt": "kept\n", "extra.txt": "extra\n"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// One turn per prompt (UserPromptSubmit), each with the paths its
	// patches named: added, updated, moved from and to, and added by the
	// patch run through the shell.
	e.WantTurns(sid,
		p1+": keep.txt=created notes.txt=created",
		p2+": extra.txt=created keep.txt=deleted notes.txt=modified sub/kept.txt=created",
		p3+":",
	)

	e.CheckRewinds(sid, []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	}, "1", p2, after)
}

// codexRun is one Codex CLI session in a test: its environment and the
// session id its first prompt started.
type codexRun struct {
	e     *harness.Env
	codex string
	sid   string
}

// newCodexRun sets up Codex in home to use srv, the scripted Responses API
// server (closed when the test ends): a provider for it (OPENAI_BASE_URL
// alone would try a websocket first) and, with trustProject, ws as a
// trusted project, so that Codex loads its .codex/ layer.
func newCodexRun(t *testing.T, ws, home, store string, srv *fakemodel.Server, trustProject bool) *codexRun {
	t.Helper()
	codex := harness.AgentBin(t, "CKPT_CODEX_BIN", "codex", "@openai/codex")
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	})
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	config := `model = "gpt-5.5"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "` + srv.URL + `/v1"
wire_api = "responses"
env_key = "CKPT_TEST_OPENAI_KEY"
`
	if trustProject {
		config += "\n[projects." + tomlString(ws) + "]\ntrust_level = \"trusted\"\n"
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	env := harness.IsolatedEnv([]string{"OPENAI_", "CODEX_", "RUST_LOG"},
		"HOME="+home, "CODEX_HOME="+codexHome, "CKPT_HOME="+store, "CKPT_TEST_OPENAI_KEY=sk-test")
	c := &codexRun{e: &harness.Env{T: t, WS: ws, Store: store, Environ: env}, codex: codex}
	return c
}

// prompt runs `codex exec` with prompt p: a new session the first time,
// then `resume` of it, which keeps its id (the hooks' session id). Hooks
// run only when trusted: the bypass flag is what automation uses instead
// of trusting them in the TUI's /hooks.
func (c *codexRun) prompt(p string) {
	t := c.e.T
	t.Helper()
	args := []string{"exec", "-m", "gpt-5.5", "--dangerously-bypass-approvals-and-sandbox",
		"--dangerously-bypass-hook-trust", "--skip-git-repo-check", "--json"}
	if c.sid != "" {
		args = append(args, "resume", c.sid)
	}
	out, errOut, err := c.e.Run(c.e.WS, nil, c.codex, append(args, p)...)
	if err != nil {
		t.Fatalf("codex exec %q: %v\nstdout: %s\nstderr: %s", p, err, out, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "thread.started" {
			if c.sid != "" && ev.ThreadID != c.sid {
				t.Fatalf("codex exec resume %s started thread %s", c.sid, ev.ThreadID)
			}
			c.sid = ev.ThreadID
		}
	}
	if c.sid == "" {
		t.Fatalf("codex exec %q: no thread.started event\nstdout: %s\nstderr: %s", p, out, errOut)
	}
}

// TestCodexRealBinaryUserHooks: `ckpt install codex --user` writes
// $CODEX_HOME/hooks.json, which the real Codex runs in a project it was
// never told to trust.
func TestCodexRealBinaryUserHooks(t *testing.T) {
	t.Parallel()
	harness.AgentBin(t, "CKPT_CODEX_BIN", "codex", "@openai/codex")
	ws, home, store := harness.TestDirs(t)
	const p1 = "create the notes"
	srv, err := fakemodel.NewResponses(map[string][]fakemodel.Step{
		p1: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: notes.txt\n+alpha\n*** End Patch\n"}},
			{Text: "Created."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := newCodexRun(t, ws, home, store, srv, false)
	c.e.Ckpt("install", "codex", "--user")
	if _, err := os.Stat(filepath.Join(home, ".codex", "hooks.json")); err != nil {
		t.Fatal(err)
	}
	c.prompt(p1)
	c.e.WantFiles("after prompt 1", map[string]string{"notes.txt": "alpha\n"})
	c.e.WantTurns(c.sid, p1+": notes.txt=created")
	if _, err := os.Stat(filepath.Join(ws, ".codex")); err == nil {
		t.Error("install --user wrote into the workspace")
	}
}

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// version runs `codex --version`, for the log.
func (c *codexRun) version() string {
	out, _, _ := c.e.Run(c.e.WS, nil, c.codex, "--version")
	return strings.TrimSpace(out)
}

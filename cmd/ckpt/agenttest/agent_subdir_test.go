package agenttest_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/agent"
	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestAgentsInSubdirRealBinary runs each real agent CLI whose harness
// exists in a subdirectory of the workspace `ckpt install AGENT` was run
// in: what it writes there is captured into the workspace's session, or,
// for an agent that does not load the workspace's hooks from there,
// install said so. Codex and Copilot look for the git repository's root:
// they run both outside a repository and at its root.
func TestAgentsInSubdirRealBinary(t *testing.T) {
	t.Parallel()
	for _, git := range []bool{false, true} {
		name := "no git"
		if git {
			name = "git root"
		}
		t.Run(name, func(t *testing.T) { agentsInSubdir(t, git) })
	}
}

func agentsInSubdir(t *testing.T, git bool) {
	gitInit := func(t *testing.T, ws string) {
		t.Helper()
		if !git {
			return
		}
		if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
			t.Skipf("git init: %v %s", err, out)
		}
	}
	t.Run("claude", func(t *testing.T) {
		claude := claudeBin(t)
		ws, home, store := harness.TestDirs(t)
		sub := harness.MkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewAnthropic(map[string][]fakemodel.Step{harness.SubdirPrompt: {
			{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		e := &harness.Env{T: t, WS: ws, Store: store, Claude: claude, Environ: claudeEnv(home, store, srv.URL)}
		out := e.Install("claude")
		if o, errOut, err := e.Run(sub, nil, claude, "--permission-mode", "acceptEdits", "-p", harness.SubdirPrompt); err != nil {
			t.Fatalf("claude: %v\n%s\n%s", err, o, errOut)
		}
		e.CheckSubdir("claude", out)
	})
	t.Run("gemini", func(t *testing.T) {
		harness.AgentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
		ws, home, store := harness.TestDirs(t)
		sub := harness.MkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewGemini(map[string][]fakemodel.Step{harness.SubdirPrompt: {
			{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		g := newGeminiRun(t, ws, home, store, srv, true)
		out := g.e.Install("gemini")
		in := *g
		in.e = &harness.Env{T: t, WS: sub, Store: store, Environ: g.e.Environ, Timeout: g.e.Timeout}
		in.prompt(harness.SubdirPrompt)
		g.e.CheckSubdir("gemini", out)
	})
	t.Run("codex", func(t *testing.T) {
		harness.AgentBin(t, "CKPT_CODEX_BIN", "codex", "@openai/codex")
		ws, home, store := harness.TestDirs(t)
		sub := harness.MkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewResponses(map[string][]fakemodel.Step{harness.SubdirPrompt: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: note.txt\n+note\n*** End Patch\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		c := newCodexRun(t, ws, home, store, srv, true)
		out := c.e.Install("codex")
		in := *c
		in.e = &harness.Env{T: t, WS: sub, Store: store, Environ: c.e.Environ, Timeout: c.e.Timeout}
		in.prompt(harness.SubdirPrompt)
		c.e.CheckSubdir("codex", out)
	})
	t.Run("copilot", func(t *testing.T) {
		copilot := harness.AgentBin(t, "CKPT_COPILOT_BIN", "copilot", "@github/copilot")
		ws, home, store := harness.TestDirs(t)
		sub := harness.MkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{harness.SubdirPrompt: {
			{Tool: "create", Input: map[string]any{"path": filepath.Join(sub, "note.txt"), "file_text": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		copilotHome := filepath.Join(home, ".copilot")
		if err := os.MkdirAll(copilotHome, 0o755); err != nil {
			t.Fatal(err)
		}
		trust, _ := json.Marshal(map[string]any{"trustedFolders": []string{ws}})
		if err := os.WriteFile(filepath.Join(copilotHome, "config.json"), trust, 0o644); err != nil {
			t.Fatal(err)
		}
		env := harness.IsolatedEnv([]string{"COPILOT_", "GITHUB_", "GH_"},
			"HOME="+home, "COPILOT_HOME="+copilotHome, "CKPT_HOME="+store,
			"COPILOT_PROVIDER_BASE_URL="+srv.URL+"/v1", "COPILOT_PROVIDER_API_KEY=sk-test", "COPILOT_MODEL=gpt-4.1")
		e := &harness.Env{T: t, WS: ws, Store: store, Environ: env}
		out := e.Install("copilot")
		if o, errOut, err := e.Run(sub, nil, copilot, "-p", harness.SubdirPrompt, "--allow-all-tools", "--allow-all-paths", "--no-auto-update"); err != nil {
			t.Fatalf("copilot: %v\n%s\n%s", err, o, errOut)
		}
		e.CheckSubdir("copilot", out)
	})
	t.Run("opencode", func(t *testing.T) {
		if git {
			t.Skip("OpenCode loads a subdirectory's enclosing .opencode with or without git (tried without)")
		}
		opencode := harness.AgentBin(t, "CKPT_OPENCODE_BIN", "opencode", "opencode-ai")
		ws, home, store := harness.TestDirs(t)
		sub := harness.MkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{harness.SubdirPrompt: {
			{Tool: "write", Input: map[string]any{"filePath": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		configDir := filepath.Join(home, ".config", "opencode")
		harness.SeedPluginDeps(t, configDir, "@opencode-ai/plugin")
		config, _ := json.Marshal(map[string]any{
			"provider": map[string]any{"scripted": map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "scripted",
				"options": map[string]any{"baseURL": srv.URL + "/v1", "apiKey": "sk-test"},
				"models":  map[string]any{"gpt-4.1": map[string]any{"name": "gpt-4.1"}},
			}},
			"model": "scripted/gpt-4.1", "autoupdate": false, "share": "disabled",
		})
		if err := os.WriteFile(filepath.Join(configDir, "opencode.json"), config, 0o644); err != nil {
			t.Fatal(err)
		}
		env := harness.IsolatedEnv([]string{"OPENCODE_", "OPENAI_"},
			"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
			"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "CKPT_HOME="+store,
			"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_AUTOUPDATE=true")
		e := &harness.Env{T: t, WS: ws, Store: store, Environ: env}
		out := e.Install("opencode")
		harness.SeedPluginDeps(t, filepath.Join(ws, ".opencode"), "@opencode-ai/plugin")
		if o, errOut, err := e.Run(sub, nil, opencode, append([]string{"run", "--auto"}, strings.Fields(harness.SubdirPrompt)...)...); err != nil {
			t.Fatalf("opencode: %v\n%s\n%s", err, o, errOut)
		}
		e.CheckSubdir("opencode", out)
	})
	t.Run("cline", func(t *testing.T) {
		cline := harness.AgentBin(t, "CKPT_CLINE_BIN", "cline", "cline")
		ws, home, store := harness.TestDirs(t)
		t.Cleanup(func() { stopClineHubs(t, home) })
		sub := harness.MkSub(t, ws)
		gitInit(t, ws)
		var e *harness.Env
		// The turn agent_start opens comes before the model's first
		// answer (see TestClineRealBinary) when Cline loads the
		// workspace's hooks from sub; when it does not (its install
		// says so), no turn comes to wait for.
		ag, _ := agent.Lookup("cline")
		loads := agent.SubdirNote(ag, ws) == ""
		srv, err := fakemodel.NewOpenAIChatWaiting(map[string][]fakemodel.Step{harness.SubdirPrompt: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: note.txt\n+note\n*** End Patch\n"}},
			{Text: "Written."},
		}}, func(_ string, n int) {
			if n == 0 && loads {
				e.WaitTurns(1, 2*time.Minute)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		e = newClineEnv(t, cline, ws, home, store, srv)
		out := e.Install("cline")
		clineACP(t, cline, e.Environ, sub)(harness.SubdirPrompt)
		e.CheckSubdir("cline", out)
	})
	t.Run("pi", func(t *testing.T) {
		piCommand(t)
		ws, home, store := harness.TestDirs(t)
		sub := harness.MkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{harness.SubdirPrompt: {
			{Tool: "write", Input: map[string]any{"path": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		e := newPiEnv(t, ws, home, store, srv)
		out := e.Install("pi")
		in := *e
		in.WS = sub
		startPi(t, &in).prompt(harness.SubdirPrompt)
		e.CheckSubdir("pi", out)
	})
}

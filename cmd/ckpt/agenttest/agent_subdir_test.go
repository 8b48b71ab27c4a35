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
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// subdirPrompt is the prompt every agent gets in the subdirectory tests.
const subdirPrompt = "write the note"

// subdirSession is the session of e's store that recorded the note the
// agent wrote in ws/sub: its id and workspace ("" when none did).
func (e *agentEnv) subdirSession() (id, workspace string, files []string) {
	e.t.Helper()
	var list []struct {
		ID        string `json:"id"`
		Workspace string `json:"workspace"`
	}
	if err := json.Unmarshal([]byte(e.ckpt("sessions", "--json")), &list); err != nil {
		e.t.Fatal(err)
	}
	for _, s := range list {
		for _, turn := range e.ckptTurns(s.ID) {
			if strings.Contains(turn, "note.txt") {
				return s.ID, s.Workspace, []string{turn}
			}
		}
	}
	return "", "", nil
}

// checkSubdir checks what `ckpt install AGENT` in e.ws and the agent's run
// in e.ws/sub left: the note the agent wrote there was captured into a
// session of the workspace e.ws (not of sub); or, for an agent that does
// not load the workspace's hooks from a subdirectory (subdirLoad), install
// said so and nothing was captured: were the agent to start loading them,
// this fails, and subdirLoad must change.
func (e *agentEnv) checkSubdir(name, installErr string) {
	e.t.Helper()
	id, ws, turns := e.subdirSession()
	e.t.Logf("%s in a subdirectory: session %q, workspace %q, turns %q", name, id, ws, turns)
	ag, ok := agent.Lookup(name)
	if !ok {
		e.t.Fatalf("no agent %q", name)
	}
	if note := agent.SubdirNote(ag, e.ws); note != "" {
		if !strings.Contains(installErr, "ckpt: note: "+note) {
			e.t.Errorf("install %s did not say %q; it said:\n%s", name, note, installErr)
		}
		if id != "" {
			e.t.Errorf("%s loaded the workspace's hooks from a subdirectory after all (session %s): subdirLoad is out of date", name, id)
		}
		return
	}
	if id == "" {
		e.t.Errorf("%s run in %s/sub: nothing captured", name, e.ws)
		return
	}
	if ws != e.ws {
		e.t.Errorf("%s run in %s/sub: session %s has workspace %s, want %s", name, e.ws, id, ws, e.ws)
	}
	if len(turns) != 1 || !strings.Contains(turns[0], " sub/note.txt=created") {
		e.t.Errorf("%s: turns %q, want sub/note.txt created", name, turns)
	}
}

// install runs `ckpt install ARGS` in the workspace and returns its stderr.
func (e *agentEnv) install(args ...string) string {
	e.t.Helper()
	out, errOut, err := e.run(e.ws, nil, "ckpt", append([]string{"install"}, args...)...)
	if err != nil {
		e.t.Fatalf("ckpt install %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return errOut
}

func mkSub(t *testing.T, ws string) string {
	t.Helper()
	sub := filepath.Join(ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return sub
}

// TestAgentsInSubdirRealBinary runs each real agent CLI whose harness
// exists in a subdirectory of the workspace `ckpt install AGENT` was run
// in: what it writes there is captured into the workspace's session, or,
// for an agent that does not load the workspace's hooks from there,
// install said so. Codex and Copilot look for the git repository's root:
// they run both outside a repository and at its root.
func TestAgentsInSubdirRealBinary(t *testing.T) {
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
		ws, home, store := agentTestDirs(t)
		sub := mkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewAnthropic(map[string][]fakemodel.Step{subdirPrompt: {
			{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		e := &agentEnv{t: t, ws: ws, store: store, claude: claude, env: claudeEnv(home, store, srv.URL)}
		out := e.install("claude")
		if o, errOut, err := e.run(sub, nil, claude, "--permission-mode", "acceptEdits", "-p", subdirPrompt); err != nil {
			t.Fatalf("claude: %v\n%s\n%s", err, o, errOut)
		}
		e.checkSubdir("claude", out)
	})
	t.Run("gemini", func(t *testing.T) {
		agentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
		ws, home, store := agentTestDirs(t)
		sub := mkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewGemini(map[string][]fakemodel.Step{subdirPrompt: {
			{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		g := newGeminiRun(t, ws, home, store, srv, true)
		out := g.e.install("gemini")
		in := *g
		in.e = &agentEnv{t: t, ws: sub, store: store, env: g.e.env, timeout: g.e.timeout}
		in.prompt(subdirPrompt)
		g.e.checkSubdir("gemini", out)
	})
	t.Run("codex", func(t *testing.T) {
		agentBin(t, "CKPT_CODEX_BIN", "codex", "@openai/codex")
		ws, home, store := agentTestDirs(t)
		sub := mkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewResponses(map[string][]fakemodel.Step{subdirPrompt: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: note.txt\n+note\n*** End Patch\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		c := newCodexRun(t, ws, home, store, srv, true)
		out := c.e.install("codex")
		in := *c
		in.e = &agentEnv{t: t, ws: sub, store: store, env: c.e.env, timeout: c.e.timeout}
		in.prompt(subdirPrompt)
		c.e.checkSubdir("codex", out)
	})
	t.Run("copilot", func(t *testing.T) {
		copilot := agentBin(t, "CKPT_COPILOT_BIN", "copilot", "@github/copilot")
		ws, home, store := agentTestDirs(t)
		sub := mkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{subdirPrompt: {
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
		env := isolatedEnv([]string{"COPILOT_", "GITHUB_", "GH_"},
			"HOME="+home, "COPILOT_HOME="+copilotHome, "CKPT_HOME="+store,
			"COPILOT_PROVIDER_BASE_URL="+srv.URL+"/v1", "COPILOT_PROVIDER_API_KEY=sk-test", "COPILOT_MODEL=gpt-4.1")
		e := &agentEnv{t: t, ws: ws, store: store, env: env, timeout: 40 * time.Second}
		out := e.install("copilot")
		if o, errOut, err := e.run(sub, nil, copilot, "-p", subdirPrompt, "--allow-all-tools", "--allow-all-paths", "--no-auto-update"); err != nil {
			t.Fatalf("copilot: %v\n%s\n%s", err, o, errOut)
		}
		e.checkSubdir("copilot", out)
	})
	t.Run("opencode", func(t *testing.T) {
		if git {
			t.Skip("OpenCode loads a subdirectory's enclosing .opencode with or without git (tried without)")
		}
		opencode := agentBin(t, "CKPT_OPENCODE_BIN", "opencode", "opencode-ai")
		ws, home, store := agentTestDirs(t)
		sub := mkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{subdirPrompt: {
			{Tool: "write", Input: map[string]any{"filePath": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		configDir := filepath.Join(home, ".config", "opencode")
		seedOpenCodeDeps(t, configDir)
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
		env := isolatedEnv([]string{"OPENCODE_", "OPENAI_"},
			"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
			"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "CKPT_HOME="+store,
			"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_AUTOUPDATE=true")
		e := &agentEnv{t: t, ws: ws, store: store, env: env}
		out := e.install("opencode")
		seedOpenCodeDeps(t, filepath.Join(ws, ".opencode"))
		if o, errOut, err := e.run(sub, nil, opencode, append([]string{"run", "--auto"}, strings.Fields(subdirPrompt)...)...); err != nil {
			t.Fatalf("opencode: %v\n%s\n%s", err, o, errOut)
		}
		e.checkSubdir("opencode", out)
	})
	t.Run("cline", func(t *testing.T) {
		cline := agentBin(t, "CKPT_CLINE_BIN", "cline", "cline")
		ws, home, store := agentTestDirs(t)
		t.Cleanup(func() { stopClineHubs(t, home) })
		sub := mkSub(t, ws)
		gitInit(t, ws)
		var e *agentEnv
		// The turn agent_start opens comes before the model's first
		// answer (see TestClineRealBinary), if the hooks run at all.
		srv, err := fakemodel.NewOpenAIChatWaiting(map[string][]fakemodel.Step{subdirPrompt: {
			{Tool: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: note.txt\n+note\n*** End Patch\n"}},
			{Text: "Written."},
		}}, func(_ string, n int) {
			if n == 0 {
				e.waitTurns(1, 20*time.Second)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		e = newClineEnv(t, cline, ws, home, store, srv)
		out := e.install("cline")
		clineACP(t, cline, e.env, sub)(subdirPrompt)
		e.checkSubdir("cline", out)
	})
	t.Run("pi", func(t *testing.T) {
		piCommand(t)
		ws, home, store := agentTestDirs(t)
		sub := mkSub(t, ws)
		gitInit(t, ws)
		srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{subdirPrompt: {
			{Tool: "write", Input: map[string]any{"path": filepath.Join(sub, "note.txt"), "content": "note\n"}},
			{Text: "Written."},
		}})
		if err != nil {
			t.Fatal(err)
		}
		e := newPiEnv(t, ws, home, store, srv)
		out := e.install("pi")
		in := *e
		in.ws = sub
		startPi(t, &in).prompt(subdirPrompt)
		e.checkSubdir("pi", out)
	})
}

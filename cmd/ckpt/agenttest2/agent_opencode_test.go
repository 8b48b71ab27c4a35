package agenttest2_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestOpenCodeRealBinary drives the real OpenCode CLI (`opencode run`)
// against a scripted Chat Completions server behind its openai-compatible
// provider: three prompts write files, read and edit one and, by its bash
// tool in scan mode, delete them, through the plugin `ckpt install
// opencode` wrote to .opencode/plugin/ckpt.js; then every rewind scope and
// undo are checked byte for byte.
func TestOpenCodeRealBinary(t *testing.T) {
	t.Parallel()
	opencode := harness.AgentBin(t, "CKPT_OPENCODE_BIN", "opencode", "opencode-ai")
	ws, home, store := harness.TestDirs(t)

	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
	)
	notes := filepath.Join(ws, "notes.txt")
	srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{
		p1: {
			{Tool: "write", Input: map[string]any{"filePath": notes, "content": "alpha\nline two\n"}},
			{Tool: "write", Input: map[string]any{"filePath": filepath.Join(ws, "keep.txt"), "content": "keep me\r\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "read", Input: map[string]any{"filePath": notes}},
			{Tool: "edit", Input: map[string]any{"filePath": notes, "oldString": "alpha", "newString": "beta"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "bash", Input: map[string]any{"command": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt", "description": "clean up"}},
			{Text: "Cleaned."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// The scripted provider in the user's configuration, so the workspace
	// holds only what the agent writes.
	configDir := filepath.Join(home, ".config", "opencode")
	harness.SeedPluginDeps(t, configDir, "@opencode-ai/plugin")
	config, _ := json.Marshal(map[string]any{
		"provider": map[string]any{"scripted": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "scripted",
			"options": map[string]any{"baseURL": srv.URL + "/v1", "apiKey": "sk-test"},
			"models":  map[string]any{"gpt-4.1": map[string]any{"name": "gpt-4.1"}},
		}},
		"model":      "scripted/gpt-4.1",
		"autoupdate": false,
		"share":      "disabled",
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
	defer func() {
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	}()
	e.LogVersionIfFailed(opencode)

	e.Ckpt("install", "opencode")
	plugin, err := os.ReadFile(filepath.Join(ws, ".opencode", "plugin", "ckpt.js"))
	if err != nil || !strings.Contains(string(plugin), `const argv = ["ckpt","hook","opencode"];`) {
		t.Fatalf("plugin after install: %s (%v)", plugin, err)
	}
	harness.SeedPluginDeps(t, filepath.Join(ws, ".opencode"), "@opencode-ai/plugin")

	// `opencode run` joins its words into the message (quoting a word
	// that holds a space), so the prompt goes as separate words, as typed
	// in a shell. The session is the plugin's session id, which later
	// runs continue.
	sid := ""
	prompt := func(p string) {
		t.Helper()
		args := []string{"run", "--auto"}
		if sid != "" {
			args = append(args, "--session", sid)
		}
		out, errOut, err := e.Run(ws, nil, opencode, append(args, strings.Fields(p)...)...)
		if err != nil {
			t.Fatalf("opencode run %q: %v\nstdout: %s\nstderr: %s", p, err, out, errOut)
		}
	}
	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	sid = e.OnlySession()
	if !strings.HasPrefix(sid, "ses_") {
		t.Errorf("session %q is not an OpenCode session id", sid)
	}
	// Scan mode for the session from its second turn on: the shell's
	// deletions in prompt 3 rewind too.
	e.Ckpt("--session", sid, "scan", "on")
	prompt(p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// One turn per prompt (chat.message), each with the files its write
	// and edit calls named (the read records nothing).
	e.WantTurns(sid, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified", p3+":")

	e.CheckRewinds(sid, []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	}, "1", p2, after)
}

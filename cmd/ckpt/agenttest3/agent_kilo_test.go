package agenttest3_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestKiloRealBinary drives the real Kilo Code CLI (`kilo run`) against a
// scripted Chat Completions server behind its openai-compatible provider:
// three prompts write files, read and edit one and, by its bash tool in
// scan mode, delete them, through the plugin `ckpt install kilo` wrote to
// .kilo/plugin/ckpt.js; then every rewind scope and undo are checked byte
// for byte, and the workspace's .git is left as it was.
func TestKiloRealBinary(t *testing.T) {
	t.Parallel()
	kilo := harness.AgentBin(t, "CKPT_KILO_BIN", "kilo", "@kilocode/cli")
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
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	})

	e := newKiloEnv(t, ws, home, store, srv)
	defer e.KeepGit()()
	e.LogVersionIfFailed(kilo)

	e.Ckpt("install", "kilo")
	plugin, err := os.ReadFile(filepath.Join(ws, ".kilo", "plugin", "ckpt.js"))
	if err != nil || !strings.Contains(string(plugin), `const argv = ["ckpt","hook","kilo"];`) {
		t.Fatalf("plugin after install: %s (%v)", plugin, err)
	}
	harness.SeedPluginDeps(t, filepath.Join(ws, ".kilo"), "@kilocode/plugin")

	// `kilo run` joins its words into the message, as OpenCode's does.
	// The session is the plugin's session id, which later runs continue.
	sid := ""
	prompt := func(p string) {
		t.Helper()
		args := []string{"run", "--auto"}
		if sid != "" {
			args = append(args, "--session", sid)
		}
		out, errOut, err := e.Run(ws, nil, kilo, append(args, strings.Fields(p)...)...)
		if err != nil {
			t.Fatalf("kilo run %q: %v\nstdout: %s\nstderr: %s", p, err, out, errOut)
		}
	}
	prompt(p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	sid = e.OnlySession()
	if !strings.HasPrefix(sid, "ses_") {
		t.Errorf("session %q is not a Kilo session id", sid)
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

	e.WantTurns(sid, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified", p3+":")

	e.CheckRewinds(sid, []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	}, "1", p2, after)
}

// seedKiloDeps marks dir, a Kilo configuration directory, as having its
// dependencies installed: Kilo otherwise runs an npm install of its
// plugin SDK into each configuration directory it loads, from the
// registry (ckpt's plugin imports nothing from it).
func seedKiloDeps(t *testing.T, dir string) {
	t.Helper()
	deps := `{"dependencies": {"@kilocode/plugin": "*"}}`
	lock := `{"lockfileVersion": 3, "packages": {"": {"dependencies": {"@kilocode/plugin": "*"}}}}`
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"package.json": deps, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newKiloEnv is the environment of the Kilo Code CLI in workspace ws with
// a new home: srv, a scripted Chat Completions server, as a provider in
// the user's configuration, Kilo's network services off, and ckpt's store.
func newKiloEnv(t *testing.T, ws, home, store string, srv *fakemodel.Server) *harness.Env {
	t.Helper()
	// The scripted provider in the user's configuration, so the workspace
	// holds only what the agent writes.
	configDir := filepath.Join(home, ".config", "kilo")
	seedKiloDeps(t, configDir)
	config, _ := json.Marshal(map[string]any{
		"provider": map[string]any{"scripted": map[string]any{
			"npm":     "@ai-sdk/openai-compatible",
			"name":    "scripted",
			"options": map[string]any{"baseURL": srv.URL + "/v1", "apiKey": "sk-test"},
			"models":  map[string]any{"gpt-4.1": map[string]any{"name": "gpt-4.1"}},
		}},
		"model":              "scripted/gpt-4.1",
		"autoupdate":         false,
		"share":              "disabled",
		"disabled_providers": []string{"kilo"},
	})
	if err := os.WriteFile(filepath.Join(configDir, "kilo.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	// Kilo's own services that reach its servers are off: a run offline
	// otherwise waits out their network timeouts.
	env := harness.IsolatedEnv([]string{"KILO_", "KILOCODE_", "OPENCODE_", "OPENAI_"},
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "CKPT_HOME="+store,
		"KILO_DISABLE_MODELS_FETCH=true", "KILO_DISABLE_AUTOUPDATE=true", "KILO_TELEMETRY_LEVEL=off",
		"KILO_DISABLE_CODEBASE_INDEXING=true", "KILO_DISABLE_SESSION_INGEST=true", "KILO_DISABLE_PRESENCE=true",
		"KILO_DISABLE_LSP_DOWNLOAD=true", "KILO_DISABLE_SHARE=true")
	return &harness.Env{T: t, WS: ws, Store: store, Environ: env, Timeout: 10 * time.Minute}
}

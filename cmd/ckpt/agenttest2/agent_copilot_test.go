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

// TestCopilotRealBinary drives the real GitHub Copilot CLI (`copilot -p`)
// against a scripted Chat Completions server: three prompts create files,
// edit one and, by its bash tool in scan mode, delete them, through the
// hooks `ckpt install copilot` wrote to .github/hooks/ckpt.json; then
// every rewind scope and undo are checked byte for byte.
func TestCopilotRealBinary(t *testing.T) {
	t.Parallel()
	copilot := harness.AgentBin(t, "CKPT_COPILOT_BIN", "copilot", "@github/copilot")
	ws, home, store := harness.TestDirs(t)
	ws2, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
		p4 = "create a note elsewhere"
	)
	srv, err := fakemodel.NewOpenAIChat(map[string][]fakemodel.Step{
		p1: {
			{Tool: "create", Input: map[string]any{"path": filepath.Join(ws, "notes.txt"), "file_text": "alpha\nline two\n"}},
			{Tool: "create", Input: map[string]any{"path": filepath.Join(ws, "keep.txt"), "file_text": "keep me\r\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "edit", Input: map[string]any{"path": filepath.Join(ws, "notes.txt"), "old_str": "alpha", "new_str": "beta"}},
			{Text: "Edited."},
		},
		p3: {
			{Tool: "bash", Input: map[string]any{"command": "rm notes.txt keep.txt && printf 'by shell\\n' > shell.txt", "description": "clean up"}},
			{Text: "Cleaned."},
		},
		p4: {
			{Tool: "create", Input: map[string]any{"path": filepath.Join(ws2, "other.txt"), "file_text": "other\n"}},
			{Text: "Created."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// Copilot loads a project's .github/hooks only in a folder the user
	// trusts: the trust it saves when asked, here written beforehand
	// (--trust-folder trusts one new session and cannot resume one).
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
	defer func() {
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	}()
	e.LogVersionIfFailed(copilot)

	e.Ckpt("install", "copilot")
	hooks, err := os.ReadFile(filepath.Join(ws, ".github", "hooks", "ckpt.json"))
	if err != nil || !strings.Contains(string(hooks), `"bash": "ckpt hook copilot"`) {
		t.Fatalf("hooks after install: %s (%v)", hooks, err)
	}

	// --session-id names a new session and resumes it later: the id the
	// hooks' events carry. Scan mode is on for it before it starts.
	const sid = "0f4b6c1e-7a2d-4c3b-8e9f-1a2b3c4d5e6f"
	e.Ckpt("--session", sid, "scan", "on")
	prompt := func(dir, sid, p string) {
		t.Helper()
		out, errOut, err := e.Run(dir, nil, copilot, "-p", p, "--session-id", sid,
			"--allow-all-tools", "--allow-all-paths", "--no-auto-update")
		if err != nil {
			t.Fatalf("copilot -p %q: %v\nstdout: %s\nstderr: %s", p, err, out, errOut)
		}
	}
	prompt(ws, sid, p1)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 1", afterP1)
	prompt(ws, sid, p2)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.WantFiles("after prompt 2", afterP2)
	prompt(ws, sid, p3)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.WantFiles("after prompt 3", after)

	// One turn per prompt (userPromptSubmitted), each with the files its
	// create and edit calls named.
	e.WantTurns(sid, p1+": keep.txt=created notes.txt=created", p2+": notes.txt=modified", p3+":")

	e.CheckRewinds(sid, []harness.RewindWant{
		{Turn: "2", Want: afterP2},
		{Turn: "1", Want: afterP1},
		{Turn: "0", Want: map[string]string{}},
	}, "1", p2, after)

	// A user-level install (COPILOT_HOME/hooks) runs in every folder,
	// trusted or not.
	e.Ckpt("--workspace", ws2, "install", "copilot", "--user")
	if _, err := os.Stat(filepath.Join(copilotHome, "hooks", "ckpt.json")); err != nil {
		t.Fatalf("install --user: %v", err)
	}
	const sid2 = "6a7b8c9d-0e1f-4a2b-9c3d-4e5f6a7b8c9d"
	prompt(ws2, sid2, p4)
	e2 := *e
	e2.WS = ws2
	e2.WantTurns(sid2, p4+": other.txt=created")
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestGeminiRealBinary drives the real Gemini CLI (`gemini -p`) against a
// scripted Gemini API server: three prompts create files with write_file,
// edit one with replace, and delete them with run_shell_command in scan
// mode, through the hooks `ckpt install gemini` wrote; then every rewind
// scope and undo are checked byte for byte.
func TestGeminiRealBinary(t *testing.T) {
	gemini := agentBin(t, "CKPT_GEMINI_BIN", "gemini", "@google/gemini-cli")
	ws, home, store := agentTestDirs(t)

	const (
		p1 = "create the notes"
		p2 = "edit the notes"
		p3 = "clean up with the shell"
	)
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
	defer srv.Close()

	// API-key auth against the scripted server. The workspace is trusted
	// through the environment: Gemini loads a project's hooks only in a
	// trusted folder, and --skip-trust does not make it load them. No
	// relaunch of itself in a second Node process: half the start-up time.
	settings := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv([]string{"GEMINI_", "GOOGLE_"},
		"HOME="+home, "GEMINI_CLI_HOME="+home, "CKPT_HOME="+store,
		"GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_API_KEY=test-key", "GEMINI_CLI_TRUST_WORKSPACE=true",
		"GEMINI_CLI_NO_RELAUNCH=true")
	e := &agentEnv{t: t, ws: ws, store: store, env: env, timeout: 40 * time.Second}
	defer func() {
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	}()
	ver, _, _ := e.run(ws, nil, gemini, "--version")
	t.Logf("gemini --version: %s", strings.TrimSpace(ver))

	e.ckpt("install", "gemini")
	if b, err := os.ReadFile(filepath.Join(ws, ".gemini", "settings.json")); err != nil || !strings.Contains(string(b), `"command": "ckpt hook gemini"`) {
		t.Fatalf("settings after install: %s (%v)", b, err)
	}
	// The session is named up front, so scan mode is on before its first
	// prompt; later prompts resume it.
	const sid = "3f2b8c1e-7d4a-4e59-9b60-1a2c3d4e5f60"
	e.ckpt("--session", sid, "scan", "on")
	prompt := func(p string, args ...string) {
		t.Helper()
		full := append([]string{"-p", p, "--approval-mode", "yolo"}, args...)
		out, errOut, err := e.run(ws, nil, gemini, full...)
		if err != nil {
			t.Fatalf("gemini %s: %v\nstdout: %s\nstderr: %s", strings.Join(full, " "), err, out, errOut)
		}
	}
	prompt(p1, "--session-id", sid)
	afterP1 := map[string]string{"notes.txt": "alpha\nline two\n", "keep.txt": "keep me\r\n"}
	e.wantFiles("after prompt 1", afterP1)
	prompt(p2, "--resume", sid)
	afterP2 := map[string]string{"notes.txt": "beta\nline two\n", "keep.txt": "keep me\r\n"}
	e.wantFiles("after prompt 2", afterP2)
	prompt(p3, "--resume", sid)
	after := map[string]string{"shell.txt": "by shell\n"}
	e.wantFiles("after prompt 3", after)

	// One turn per prompt (BeforeAgent), each with what its file tools
	// wrote; the shell's changes are in the turn's manifest.
	got := e.ckptTurns(sid)
	want := []string{
		p1 + ": keep.txt=created notes.txt=created",
		p2 + ": notes.txt=modified",
		p3 + ":",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ckpt list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	e.checkRewinds(sid, []rewindWant{
		{"2", afterP2},
		{"1", afterP1},
		{"0", map[string]string{}},
	}, "1", p2, after)
}

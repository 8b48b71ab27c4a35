package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/fakemodel"
)

// TestClaudeCodeRewindCommandRealBinary: the /ckpt-rewind command `ckpt
// install claude` gives Claude Code rewinds the files of the session it is
// typed in, from inside the real Claude Code (its !`…` line runs ckpt with
// the session's id), and `ckpt undo` brings them back; uninstall removes
// the command with the rest.
func TestClaudeCodeRewindCommandRealBinary(t *testing.T) {
	claude := claudeBin(t)
	ws, home, store := agentTestDirs(t)
	const p1 = "create the notes"
	srv, err := fakemodel.NewAnthropic(map[string][]fakemodel.Step{p1: {
		{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "alpha\n"}},
		{Text: "Created."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer func() {
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
		}
	}()
	e := &agentEnv{t: t, ws: ws, store: store, claude: claude, env: claudeEnv(home, store, srv.URL)}
	e.ckpt("install", "claude")
	const sid = "6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
	e.prompt("-p", p1, "--session-id", sid)
	e.wantFiles("after prompt 1", map[string]string{"notes.txt": "alpha\n"})

	out, errOut, err := e.run(ws, nil, claude, "--permission-mode", "acceptEdits", "-p", "/ckpt-rewind 0", "--resume", sid)
	if err != nil {
		t.Fatalf("claude -p /ckpt-rewind 0: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	e.wantFiles("after /ckpt-rewind 0", map[string]string{})
	e.ckpt("--session", sid, "undo")
	e.wantFiles("after ckpt undo", map[string]string{"notes.txt": "alpha\n"})

	e.ckpt("uninstall", "claude")
	if _, err := os.Stat(filepath.Join(ws, ".claude", "commands")); err == nil {
		t.Error("uninstall left .claude/commands")
	}
}

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

// TestClaudeCodeRewindCommandRealBinary: after the real Claude Code
// recorded a session, ckpt with no --session finds it, in the workspace and
// in a subdirectory; the /ckpt-rewind command `ckpt install claude` gives
// Claude Code rewinds the files of the session it is typed in, from inside
// Claude Code (its !`…` line runs ckpt with the session's id), the status
// line then offers the conversation rewind of that turn, and `ckpt undo`
// brings the files back; uninstall removes the command with the rest.
func TestClaudeCodeRewindCommandRealBinary(t *testing.T) {
	t.Parallel()
	claude := claudeBin(t)
	ws, home, store := harness.TestDirs(t)
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
	e := &harness.Env{T: t, WS: ws, Store: store, Claude: claude, Environ: claudeEnv(home, store, srv.URL)}
	e.Ckpt("install", "claude")
	// A turn opened by hand first: the workspace's own session is not the
	// last active one once Claude has recorded its turn.
	e.Ckpt("turn", "by hand")
	const sid = "6c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
	e.Prompt("-p", p1, "--session-id", sid)
	e.WantFiles("after prompt 1", map[string]string{"notes.txt": "alpha\n"})

	// With no --session, in the workspace and in a subdirectory of it,
	// ckpt finds Claude's session and says so in one line (issue 25,
	// item 1).
	sub := harness.MkSub(t, ws)
	lastActive := "ckpt: session " + sid + ", the last active in " + ws + " (--session ID picks another; `ckpt sessions` lists them)\n"
	// (Then, maybe, the store's warning: the test's store is a temporary
	// directory.)
	for _, dir := range []string{ws, sub} {
		out, errOut, err := e.Run(dir, nil, "ckpt", "list", "--json")
		var list []struct {
			Prompt string `json:"prompt"`
		}
		if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Prompt != p1 {
			t.Errorf("ckpt list in %s: %v\nstdout: %s\nstderr: %s", dir, err, out, errOut)
		}
		if !strings.HasPrefix(errOut, lastActive) {
			t.Errorf("ckpt list in %s: stderr %q, want %q", dir, errOut, lastActive)
		}
	}
	noSession := func(dir string, args ...string) {
		t.Helper()
		out, errOut, err := e.Run(dir, nil, "ckpt", args...)
		if err != nil || !strings.HasPrefix(errOut, lastActive) {
			t.Fatalf("ckpt %s in %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), dir, err, out, errOut)
		}
	}
	noSession(sub, "rewind", "0", "--scope", "code")
	e.WantFiles("after ckpt rewind 0 in a subdirectory", map[string]string{})
	noSession(ws, "undo")
	e.WantFiles("after ckpt undo", map[string]string{"notes.txt": "alpha\n"})

	out, errOut, err := e.Run(ws, nil, claude, "--permission-mode", "acceptEdits", "-p", "/ckpt-rewind 0", "--resume", sid)
	if err != nil {
		t.Fatalf("claude -p /ckpt-rewind 0: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	e.WantFiles("after /ckpt-rewind 0", map[string]string{})
	// The status line Claude Code shows then (the prompt that ran the
	// command is a turn of its own): the conversation rewind to the same
	// turn, in one step (issue 25, item 7).
	status := `{"session_id":"` + sid + `","cwd":"` + ws + `","workspace":{"current_dir":"` + ws + `","project_dir":"` + ws + `"}}`
	line, _, err := e.Run(ws, nil, "sh", "-c", "printf '%s' '"+status+"' | ckpt statusline")
	if want := "ckpt: 2 checkpoints · scan on · undo ready · chat too: ckpt rewind 0 --scope both --resume-claude\n"; err != nil || line != want {
		t.Errorf("statusline after /ckpt-rewind 0: %q (%v), want %q", line, err, want)
	}
	noSession(sub, "undo")
	e.WantFiles("after ckpt undo", map[string]string{"notes.txt": "alpha\n"})

	e.Ckpt("uninstall", "claude")
	if _, err := os.Stat(filepath.Join(ws, ".claude", "commands")); err == nil {
		t.Error("uninstall left .claude/commands")
	}
}

//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/agent/setup"
	"github.com/ckpt/ckpt/controller"
)

// resumeAt is the --resume-session-at a `--scope both` rewind of session
// to turn would give Claude Code: the transcript entry the hook recorded
// for that turn's prompt ("" when it recorded none).
func (r *hookRig) resumeAt(session string, turn int) string {
	r.t.Helper()
	out, _ := r.ckpt("", "--session", session, "--json", "rewind", fmt.Sprint(turn), "--scope", "both", "--dry-run")
	var rj struct {
		ClaudeResume hook.Resume `json:"claude_resume"`
	}
	if err := json.Unmarshal([]byte(out), &rj); err != nil {
		r.t.Fatalf("rewind %d --dry-run --json: %v\n%s", turn, err, out)
	}
	if i := slices.Index(rj.ClaudeResume.Argv, "--resume-session-at"); i >= 0 && i+1 < len(rj.ClaudeResume.Argv) {
		return rj.ClaudeResume.Argv[i+1]
	}
	return ""
}

// TestHookServeTranscriptOutsideScope: the hook server reads an event's
// transcript_path only where Claude Code keeps the transcripts of a
// project the token was installed for ($CLAUDE_CONFIG_DIR or
// ~/.claude, projects/NAME/); a token of this workspace does not make it
// read a file elsewhere, nor another project's transcript, and the event
// is still recorded.
func TestHookServeTranscriptOutsideScope(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	tok := r.token()
	r.waitServer()
	root, err := controller.WorkspaceRoot(r.ws)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(r.ws), "other")
	projects := filepath.Join(r.home, ".claude", "projects")
	// Claude Code's folder name for a project directory: each character
	// other than an ASCII letter or digit becomes '-'.
	claudeProjectName := func(dir string) string { return regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(dir, "-") }
	transcript := func(path, uuid string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(transcriptLine("user", "u-"+uuid, "", "hi")+transcriptLine("assistant", uuid, "", "hello")), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	own := transcript(filepath.Join(projects, claudeProjectName(root), "s.jsonl"), "own-entry")
	for i, path := range []string{
		transcript(filepath.Join(other, "secret.jsonl"), "outside-entry"),                               // a file elsewhere
		transcript(filepath.Join(projects, claudeProjectName(other), "s.jsonl"), "other-project-entry"), // another project's transcript
		filepath.Join(projects, claudeProjectName(root), "..", claudeProjectName(other), "s.jsonl"),     // the same, through ".."
	} {
		if code, body := r.post("/hook/claude", tok, event("t", r.ws, "UserPromptSubmit", map[string]any{"prompt": fmt.Sprint("p", i), "transcript_path": path})); code != http.StatusOK {
			t.Fatalf("prompt %d with transcript %s: %d %q, want 200 (recorded, the transcript not read)", i, path, code, body)
		}
	}
	if code, body := r.post("/hook/claude", tok, event("t", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p3", "transcript_path": own})); code != http.StatusOK {
		t.Fatalf("prompt with this project's transcript: %d %q", code, body)
	}
	for turn := 0; turn < 3; turn++ {
		if at := r.resumeAt("t", turn); at != "" {
			t.Errorf("turn %d recorded %q from a transcript_path outside the token's install: the server read it", turn, at)
		}
	}
	if at := r.resumeAt("t", 3); at != "own-entry" {
		t.Errorf("turn 3 recorded %q from this project's transcript, want own-entry", at)
	}
}

// TestHookServeStopOutsideScope: a Stop event whose cwd the token does not
// cover does nothing at all: no background sync starts (one from inside
// does).
func TestHookServeStopOutsideScope(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	tok := r.token()
	r.waitServer()
	remoteDir := filepath.Join(filepath.Dir(r.ws), "remote")
	if err := os.MkdirAll(remoteDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.store, "config.json"), []byte(`{"remote": "file://`+remoteDir+`"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(r.ws), "other")
	os.MkdirAll(other, 0o755)
	for _, cwd := range []string{other, "/"} {
		if code, body := r.post("/hook/claude", tok, event("s", cwd, "Stop", nil)); code != http.StatusForbidden {
			t.Errorf("Stop from %s: %d %q, want 403", cwd, code, body)
		}
		// startSync creates the log before the hook answers.
		if _, err := os.Stat(filepath.Join(r.store, hook.SyncLogFile)); err == nil {
			t.Fatalf("a Stop from %s, outside the token's workspace, started a sync", cwd)
		}
	}
	if code, body := r.post("/hook/claude", tok, event("s", r.ws, "Stop", nil)); code != http.StatusOK {
		t.Fatalf("Stop from the workspace: %d %q", code, body)
	}
	if _, err := os.Stat(filepath.Join(r.store, hook.SyncLogFile)); err != nil {
		t.Fatalf("a Stop from the workspace started no sync: %v", err)
	}
	waitSynced(t, r.store, "sync")
}

// TestHookServeUserTokenScope: a --user install's token is good for
// workspaces below the home directory, not for the home directory itself
// nor for its hidden directories (~/.ssh, ~/.claude, ...), nor outside it.
func TestHookServeUserTokenScope(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--user", "--port", r.port, "--no-scan")
	home, err := controller.WorkspaceRoot(r.home)
	if err != nil {
		t.Fatal(err)
	}
	tok := r.config().TokenFor(home)
	if tok == "" {
		t.Fatalf("no token for %s: %+v", home, r.config().Tokens)
	}
	r.waitServer()
	for name, dir := range map[string]string{"proj": "proj", "deep": "src/a/b", "dotted": "proj/.hidden"} {
		cwd := filepath.Join(r.home, dir)
		os.MkdirAll(cwd, 0o755)
		if code, body := r.post("/hook/claude", tok, event(name, cwd, "UserPromptSubmit", map[string]any{"prompt": "p"})); code != http.StatusOK {
			t.Errorf("prompt in ~/%s: %d %q, want 200", dir, code, body)
		}
		if !hasSession(t, r.store, name) {
			t.Errorf("prompt in ~/%s recorded no session", dir)
		}
	}
	secret := filepath.Join(r.home, ".ssh", "id_x")
	os.MkdirAll(filepath.Dir(secret), 0o700)
	os.WriteFile(secret, []byte("key\n"), 0o600)
	for name, ev := range map[string]map[string]any{
		"home":    event("home", r.home, "UserPromptSubmit", map[string]any{"prompt": "p"}),
		"homecap": write(event("homecap", r.home, "PreToolUse", nil), secret),
		"ssh":     write(event("ssh", filepath.Dir(secret), "PreToolUse", nil), secret),
		"config":  event("config", filepath.Join(r.home, ".ssh"), "UserPromptSubmit", map[string]any{"prompt": "p"}),
		"outside": event("outside", r.ws, "UserPromptSubmit", map[string]any{"prompt": "p"}),
	} {
		if code, body := r.post("/hook/claude", tok, ev); code != http.StatusForbidden {
			t.Errorf("%s (cwd %s): %d %q, want 403", name, ev["cwd"], code, body)
		}
		if hasSession(t, r.store, name) {
			t.Errorf("%s: a session was recorded through the --user token", name)
		}
	}
	out, _ := r.ckpt("", "sessions", "--json")
	if strings.Contains(out, "id_x") {
		t.Errorf("the key was captured: %s", out)
	}
}

// TestInstallConcurrent: `ckpt install claude --http` run at once in many
// workspaces of one store: every install keeps its token in the hook
// server's configuration (the one its settings file holds), and the store
// records every directory the installs created.
func TestInstallConcurrent(t *testing.T) {
	r := newHookRig(t, ckptBinary(t))
	r.ckpt("", "install", "claude", "--http", "--port", r.port, "--no-scan")
	const n = 12
	var wss []string
	var cmds []*exec.Cmd
	for i := range n {
		ws := filepath.Join(filepath.Dir(r.ws), fmt.Sprint("ws", i))
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(r.bin, "install", "claude", "--http", "--no-scan")
		cmd.Dir, cmd.Env = ws, r.env()
		wss, cmds = append(wss, ws), append(cmds, cmd)
	}
	outs := make([]strings.Builder, n)
	for i, cmd := range cmds {
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("install in %s: %v\n%s", wss[i], err, outs[i].String())
		}
	}
	cfg := r.config()
	dirs := setup.InstallDirs(r.store)
	lost := 0
	for _, ws := range wss {
		root, err := controller.WorkspaceRoot(ws)
		if err != nil {
			t.Fatal(err)
		}
		tok := cfg.TokenFor(root)
		b, err := os.ReadFile(filepath.Join(ws, ".claude", "settings.local.json"))
		if err != nil {
			t.Fatal(err)
		}
		if tok == "" || !strings.Contains(string(b), tok) {
			lost++
			t.Errorf("%s: its settings hold a token the hook server does not have (%d tokens)", ws, len(cfg.Tokens))
		}
		if !slices.Contains(dirs, filepath.Join(root, ".claude")) {
			t.Errorf("%s: the store forgot that install created .claude there (uninstall would leave it)", ws)
		}
	}
	if lost > 0 {
		t.Logf("%d of %d concurrent installs lost their token", lost, n)
	}
}

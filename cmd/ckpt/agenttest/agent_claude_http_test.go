//go:build unix

package agenttest_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/cmd/ckpt/internal/harness"
	"github.com/ckpt/ckpt/internal/fakemodel"
	"github.com/ckpt/ckpt/internal/loopback/loopbacktest"
)

// TestClaudeCodeRealBinaryHTTP runs the real Claude Code against a
// scripted model with `ckpt install claude --http`: its PreToolUse hook is
// an http hook to the resident `ckpt serve --hooks` (the only PreToolUse
// hook installed), so the files it captured prove Claude Code posted the
// events with the token and took the empty 200 as "go on". Code rewinds
// then bring each state back.
func TestClaudeCodeRealBinaryHTTP(t *testing.T) {
	t.Parallel()
	claude := claudeBin(t)
	if _, err := exec.LookPath("ckpt"); err != nil {
		t.Skip("no ckpt on $PATH (TestMain puts this test binary there)")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, store := t.TempDir(), t.TempDir()
	// The hook server, started later by the binary, binds it.
	_, port, _ := net.SplitHostPort(loopbacktest.Addr(t))

	const p1, p2 = "create the notes", "edit the notes"
	srv, err := fakemodel.NewAnthropic(map[string][]fakemodel.Step{
		p1: {
			{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "content": "alpha\nline two\n"}},
			{Text: "Created."},
		},
		p2: {
			{Tool: "Read", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt")}},
			{Tool: "Edit", Input: map[string]any{"file_path": filepath.Join(ws, "notes.txt"), "old_string": "alpha", "new_string": "beta"}},
			{Text: "Edited."},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := &harness.Env{T: t, WS: ws, Store: store, Claude: claude, Environ: claudeEnv(home, store, srv.URL)}
	defer func() {
		if t.Failed() {
			t.Logf("model server log:\n%s", strings.Join(srv.Log(), "\n"))
			log, _ := os.ReadFile(filepath.Join(store, "hook-server.log")) // the hook server's log in the store

			t.Logf("hook server log:\n%s", log)
		}
	}()
	ver, _, _ := e.Run(ws, nil, claude, "--version")
	t.Logf("claude --version: %s", strings.TrimSpace(ver))

	e.Ckpt("install", "claude", "--http", "--port", port, "--no-scan")
	cfg, ok, err := hook.LoadConfig(store)
	if err != nil || !ok {
		t.Fatalf("hook server configuration: %v %v", ok, err)
	}
	defer func() {
		// Stop the server the install started.
		if who, st := hook.Probe(store, cfg, time.Second); st == hook.Up && who.Pid > 0 {
			syscall.Kill(who.Pid, syscall.SIGTERM)
		}
	}()
	// Up to two minutes: a safety net against a hang, not a deadline a
	// loaded machine can miss (200 tries of a refused connection were 5 s).
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(25 * time.Millisecond) {
		if _, st := hook.Probe(store, cfg, time.Second); st == hook.Up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hook server did not start within two minutes")
		}
	}
	settings, _ := os.ReadFile(filepath.Join(ws, ".claude", "settings.local.json"))
	if !bytes.Contains(settings, []byte(`"type": "http"`)) {
		t.Fatalf("settings.local.json after install --http:\n%s", settings)
	}

	const sid = "6c1d0b5f-2e3a-4b4c-8d9e-8f7a6b5c4d3e"
	e.Prompt("-p", p1, "--session-id", sid)
	e.WantFiles("after prompt 1", map[string]string{"notes.txt": "alpha\nline two\n"})
	e.Prompt("-p", p2, "--continue")
	e.WantFiles("after prompt 2", map[string]string{"notes.txt": "beta\nline two\n"})

	e.WantTurns(sid, p1+": notes.txt=created", p2+": notes.txt=modified")
	e.Ckpt("--session", sid, "rewind", "1", "--scope", "code")
	e.WantFiles("after rewind 1", map[string]string{"notes.txt": "alpha\nline two\n"})
	e.Ckpt("--session", sid, "rewind", "0", "--scope", "code")
	e.WantFiles("after rewind 0", map[string]string{})
	e.Ckpt("--session", sid, "undo")
	e.WantFiles("after undo", map[string]string{"notes.txt": "alpha\nline two\n"})
}

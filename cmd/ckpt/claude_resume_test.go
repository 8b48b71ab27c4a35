package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/internal/quote"
)

// TestRewindResumeClaudeOnATerminal: `ckpt rewind N --scope both
// --resume-claude` on a terminal rewinds, makes Claude's fork (claude -p,
// resending the prompt), then becomes Claude Code on the fork: the real
// ckpt binary, in tmux, execs claude in its own process, with the
// terminal, so Claude's keys and signals are its alone. (claude is a
// script recording how it was run.)
func TestRewindResumeClaudeOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed: a terminal is needed")
	}
	if runtime.GOOS == "windows" {
		t.Skip("Windows cannot replace a process: claude runs as ckpt's child")
	}
	bin := ckptBinary(t)
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, dir := t.TempDir(), t.TempDir()
	const S = "55555555-5555-4555-8555-555555555555"
	f := filepath.Join(ws, "f.txt")
	ev := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": S, "transcript_path": filepath.Join(dir, S+".jsonl"), "cwd": ws, "hook_event_name": name}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	hookRunIn(t, store, ev("UserPromptSubmit", map[string]any{"prompt": "write f", "prompt_id": "p-1"}))
	hookRunIn(t, store, ev("PreToolUse", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": f}}))
	if err := os.WriteFile(f, []byte("by claude\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The claude script logs each run: its pid, whether stdin is a
	// terminal, its arguments.
	log := filepath.Join(dir, "claude.log")
	claude := filepath.Join(dir, "claude")
	script := "#!/bin/sh\nt=no; [ -t 0 ] && t=yes\necho \"$$ tty=$t $*\" >> " + quote.Shell(log) + "\n"
	if err := os.WriteFile(claude, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile, done := filepath.Join(dir, "ckpt.pid"), filepath.Join(dir, "done")
	sock := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) *exec.Cmd {
		cmd := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...)
		cmd.Env = append(os.Environ(), "TERM=xterm-256color", "CKPT_CLAUDE_BIN="+claude)
		return cmd
	}
	t.Cleanup(func() { _ = tmux("kill-server").Run() })
	// The shell becomes ckpt (exec), so ckpt's pid is the shell's.
	sh := "sh -c 'echo $$ > " + quote.Shell(pidFile) + "; exec " + quote.Shell(bin) + " --store " + quote.Shell(store) + " --workspace " + quote.Shell(ws) +
		" --session " + S + " rewind 0 --scope both --resume-claude'; touch " + quote.Shell(done) + "; sleep 30"
	if out, err := tmux("new-session", "-d", "-s", "rw", "-x", "160", "-y", "50", sh).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	// Minutes: a hang guard, not a deadline a loaded machine's tmux,
	// ckpt and script could miss.
	for end := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Now().After(end) {
			screen, _ := tmux("capture-pane", "-p", "-t", "rw").Output()
			t.Fatalf("rewind --resume-claude did not end; screen:\n%s", screen)
		}
	}
	screen, _ := tmux("capture-pane", "-p", "-t", "rw").Output()
	if _, err := os.Stat(f); err == nil {
		t.Errorf("f.txt is still there after the rewind to turn 0; screen:\n%s", screen)
	}
	pid, _ := os.ReadFile(pidFile)
	b, _ := os.ReadFile(log)
	runs := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(runs) != 2 {
		t.Fatalf("claude ran %d times:\n%s\nscreen:\n%s", len(runs), b, screen)
	}
	// First the fork, resending the prompt, as a child; then Claude Code
	// on the fork, as ckpt itself, on the terminal.
	first, second := strings.Fields(runs[0]), strings.Fields(runs[1])
	if !strings.Contains(runs[0], " --session-id ") || !strings.HasSuffix(runs[0], " -p write f") || first[0] == strings.TrimSpace(string(pid)) {
		t.Errorf("first claude run %q; want the fork with -p, as a child of ckpt (pid %s)", runs[0], pid)
	}
	fork := ""
	for i, a := range first {
		if a == "--session-id" && i+1 < len(first) {
			fork = first[i+1]
		}
	}
	if len(second) != 4 || second[0] != strings.TrimSpace(string(pid)) || second[1] != "tty=yes" || second[2] != "--resume" || second[3] != fork {
		t.Errorf("second claude run %q; want ckpt's own process (pid %s) become claude --resume FORK on the terminal", runs[1], strings.TrimSpace(string(pid)))
	}
}

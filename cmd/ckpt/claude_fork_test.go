package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/agent/hook"
)

// TestClaudeRewindOfAFork: a conversation rewind of a Claude Code session
// prints a fork (F) of Claude's conversation; F's prompts are recorded into
// the same ckpt session (S). A later rewind to a turn F's prompt opened
// must fork F, where that turn's place is, not S ("No message found"), and
// anything that keeps the resume from running stops the rewind before it
// changes anything. F is no session of its own (S's index records that it
// continues S): sessions, gc, prune and verify never see it. A background subagent's <task-notification> is
// not a prompt: it opens no turn.
func TestClaudeRewindOfAFork(t *testing.T) {
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	t.Setenv("CKPT_CLAUDE_BIN", "")
	t.Setenv("PATH", os.Getenv("PATH"))
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, tdir := t.TempDir(), t.TempDir()
	const S = "44444444-4444-4444-8444-444444444444"
	f := filepath.Join(ws, "f.txt")
	tr := func(sid string) string { return filepath.Join(tdir, sid+".jsonl") }
	ev := func(sid, name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": sid, "transcript_path": tr(sid), "cwd": ws, "hook_event_name": name}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	prompt := func(sid, text, id string) {
		t.Helper()
		if s := hookRunIn(t, store, ev(sid, "UserPromptSubmit", map[string]any{"prompt": text, "prompt_id": id})); s != "" {
			t.Errorf("prompt %q: stderr %q", text, s)
		}
	}
	edit := func(sid, content string) {
		t.Helper()
		if s := hookRunIn(t, store, ev(sid, "PreToolUse", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": f}})); s != "" {
			t.Errorf("edit: stderr %q", s)
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	say := func(sid string, lines ...string) { // Claude writes its transcript
		t.Helper()
		fh, err := os.OpenFile(tr(sid), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		for _, l := range lines {
			fh.WriteString(l)
		}
	}
	read := func() string {
		b, _ := os.ReadFile(f)
		return string(b)
	}
	ckpt := func(args ...string) (int, string, string) {
		t.Helper()
		return ckptRun(t, ws, store, append([]string{"--session", S}, args...)...)
	}
	prompts := func() string {
		t.Helper()
		_, out, _ := ckpt("list", "--json")
		var list []struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("list --json: %v: %s", err, out)
		}
		var got []string
		for _, cp := range list {
			got = append(got, cp.Prompt)
		}
		return strings.Join(got, "|")
	}
	sessionDirs := func() []string {
		ents, _ := os.ReadDir(filepath.Join(store, "sessions"))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}

	// S: three prompts, each writing f.txt.
	prompt(S, "one", "p-1")
	edit(S, "one")
	say(S, transcriptLine("user", "u1", "p-1", "one"), transcriptLine("assistant", "a1", "", "did one"))
	prompt(S, "two", "p-2")
	edit(S, "two")
	say(S, transcriptLine("user", "u2", "p-2", "two"), transcriptLine("assistant", "a2", "", "did two"))
	prompt(S, "three", "p-3")
	edit(S, "three")
	say(S, transcriptLine("user", "u3", "p-3", "three"), transcriptLine("assistant", "a3", "", "did three"))

	// rewind 1: a fork F of S at a1, resending "two".
	code, out, errOut := ckpt("--json", "rewind", "1", "--scope", "both")
	var rj struct {
		ClaudeResume hook.Resume `json:"claude_resume"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rj) != nil {
		t.Fatalf("rewind 1: exit %d %s %s", code, out, errOut)
	}
	F := rj.ClaudeResume.Session
	if a := strings.Join(rj.ClaudeResume.Argv, " "); !strings.HasPrefix(a, "claude --resume "+S+" --fork-session --session-id "+F+" --resume-session-at a1 -p two") {
		t.Errorf("rewind 1 resumes with %s", a)
	}

	// F, before the printed command ever runs, continues S in S's index
	// (Store.Continue): no directory, no session of its own.
	if _, err := os.Lstat(filepath.Join(store, "sessions", F)); !os.IsNotExist(err) {
		t.Errorf("sessions/%s: %v, want none (the index records the fork)", F, err)
	}
	for _, args := range [][]string{{"sessions"}, {"gc"}, {"prune"}, {"verify"}} {
		code, out, errOut := ckpt(args...)
		if code != 0 || strings.Contains(out+errOut, F) || strings.Contains(out+errOut, "unreadable") {
			t.Errorf("%s with a continuation: exit %d\n%s%s", args[0], code, out, errOut)
		}
	}
	_, out, _ = ckpt("sessions", "--json")
	var ss []struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(out), &ss) != nil || len(ss) != 1 || ss[0].ID != S {
		t.Errorf("sessions --json: %s, want only %s", out, S)
	}

	// F runs: it resends "two" before its transcript exists, then Claude
	// writes the copied history and the new entries.
	prompt(F, "two", "p-4")
	edit(F, "two, again")
	say(F, transcriptLine("user", "u1", "p-1", "one"), transcriptLine("assistant", "a1", "", "did one"),
		transcriptLine("user", "u4", "p-4", "two"), transcriptLine("assistant", "f4", "", "did two again"))
	// A background subagent finishes: Claude Code sends a notification
	// through UserPromptSubmit, and answers it.
	prompt(F, "<task-notification>\n<task-id>bg-1</task-id>\n<status>completed</status>\n</task-notification>", "p-5")
	say(F, transcriptLine("user", "u5", "p-5", "<task-notification>…</task-notification>"), transcriptLine("assistant", "f5", "", "the subagent is done"))
	prompt(F, "three, better", "p-6")
	edit(F, "three, better")
	if got := prompts(); got != "one|two|three, better" {
		t.Errorf("turns %q, want one|two|three, better (a notification is no prompt)", got)
	}

	// rewind 2 --resume-claude with no claude to run: refused before the
	// code, the log or the store change.
	before := sessionDirs()
	path := os.Getenv("PATH")
	os.Setenv("PATH", t.TempDir())
	code, _, errOut = ckpt("rewind", "2", "--scope", "both", "--resume-claude")
	os.Setenv("PATH", path)
	if code == 0 || !strings.Contains(errOut, "no claude") || !strings.Contains(errOut, "nothing rewound") {
		t.Errorf("rewind 2 --resume-claude without claude: exit %d %s", code, errOut)
	}
	if got := read(); got != "three, better" {
		t.Errorf("f.txt after the refused rewind: %q", got)
	}
	if got := prompts(); got != "one|two|three, better" {
		t.Errorf("turns after the refused rewind: %q", got)
	}
	if after := sessionDirs(); !slices.Equal(before, after) {
		t.Errorf("sessions directory %v, then %v after the refused rewind", before, after)
	}

	if code, _, errOut := ckpt("rewind", "9", "--scope", "both", "--resume-claude"); code == 0 || !strings.Contains(errOut, "no such turn") {
		t.Errorf("rewind 9 --resume-claude: exit %d %s, want no such turn", code, errOut)
	}

	// With claude there: it forks F, whose transcript holds turn 2's place.
	bin := filepath.Join(tdir, "claude")
	args := filepath.Join(tdir, "args")
	os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\" > "+args+"\n"), 0o755)
	t.Setenv("CKPT_CLAUDE_BIN", bin)
	code, _, errOut = ckpt("rewind", "2", "--scope", "both", "--resume-claude")
	if code != 0 {
		t.Fatalf("rewind 2 --resume-claude: exit %d %s", code, errOut)
	}
	b, _ := os.ReadFile(args)
	if got := strings.TrimSpace(string(b)); !strings.HasPrefix(got, "--resume "+F+" --fork-session --session-id ") || !strings.HasSuffix(got, " --resume-session-at f5 -p three, better") {
		t.Errorf("claude ran with %q, want --resume %s … --resume-session-at f5 -p three, better", got, F)
	}
	if got := read(); got != "two, again" {
		t.Errorf("f.txt after rewind 2: %q", got)
	}
	for _, args := range [][]string{{"gc"}, {"prune"}, {"verify"}} {
		if code, out, errOut := ckpt(args...); code != 0 {
			t.Errorf("%s with two continuations: exit %d\n%s%s", args[0], code, out, errOut)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/agent/hook"
	"github.com/ckpt/ckpt/controller"
)

// resumeLabel labels the turn a session start opens in scan mode.
const resumeLabel = "(session start: workspace before the agent acts)"

// hookRunIn feeds one event to `ckpt hook claude` in-process and returns
// its stderr.
func hookRunIn(t *testing.T, store string, ev map[string]any) string {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--store", store, "hook", "claude"}, bytes.NewReader(b), &out, &errb)
	if code != 0 || out.Len() > 0 {
		t.Fatalf("hook %v: exit %d, stdout %q, stderr %q", ev["hook_event_name"], code, out.String(), errb.String())
	}
	return errb.String()
}

// transcriptLine is one entry of a Claude Code transcript as the tests
// write them: the fields ckpt reads.
func transcriptLine(typ, uuid, promptID, text string) string {
	e := map[string]any{"type": typ, "uuid": uuid, "isSidechain": false, "message": map[string]any{"role": typ, "content": text}}
	if promptID != "" {
		e["promptId"] = promptID
	}
	b, _ := json.Marshal(e)
	return string(b) + "\n"
}

func TestClaudeForkAdoptedAtFirstToolCall(t *testing.T) {
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, tdir := t.TempDir(), t.TempDir()
	const parent, child = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	ptr := filepath.Join(tdir, parent+".jsonl")
	ev := func(sid, tr, name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": sid, "transcript_path": tr, "cwd": ws, "hook_event_name": name}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	// The parent: two prompts, the transcript growing as Claude writes it.
	hookRunIn(t, store, ev(parent, ptr, "UserPromptSubmit", map[string]any{"prompt": "one", "prompt_id": "p-1"}))
	tr := transcriptLine("user", "u1", "p-1", "one") + transcriptLine("assistant", "a1", "", "done one")
	os.WriteFile(ptr, []byte(tr), 0o600)
	hookRunIn(t, store, ev(parent, ptr, "UserPromptSubmit", map[string]any{"prompt": "two", "prompt_id": "p-2"}))
	os.WriteFile(filepath.Join(ws, "x.txt"), []byte("x"), 0o644)
	hookRunIn(t, store, ev(parent, ptr, "PreToolUse", map[string]any{"tool_name": "Write", "tool_input": map[string]any{"file_path": filepath.Join(ws, "x.txt")}}))

	// The child, a Claude fork at a1: its first prompt comes before its
	// transcript exists; its first tool call sees the copied history.
	ctr := filepath.Join(tdir, child+".jsonl")
	hookRunIn(t, store, ev(child, ctr, "UserPromptSubmit", map[string]any{"prompt": "two again", "prompt_id": "p-3"}))
	// The pending first prompt is a row of the child's index, not a file
	// beside it (nor is the lock the first tool call takes).
	noFiles := func(when string) {
		t.Helper()
		for _, name := range []string{"claude-adopt", "hook.lock", "claude-continues"} {
			if _, err := os.Lstat(filepath.Join(store, "sessions", child, name)); !os.IsNotExist(err) {
				t.Errorf("%s: sessions/%s/%s: %v, want no such file", when, child, name, err)
			}
		}
	}
	noFiles("after the first prompt")
	os.WriteFile(ctr, []byte(tr+transcriptLine("user", "u3", "p-3", "two again")), 0o600)
	if s := hookRunIn(t, store, ev(child, ctr, "PreToolUse", map[string]any{"tool_name": "Edit", "tool_input": map[string]any{"file_path": filepath.Join(ws, "x.txt")}})); s != "" {
		t.Errorf("stderr %q", s)
	}
	noFiles("after the adoption")
	code, out, errOut := ckptRun(t, ws, store, "--session", child, "list", "--json")
	if code != 0 {
		t.Fatalf("list: %d %s", code, errOut)
	}
	var list []struct {
		Prompt string `json:"prompt"`
		Files  []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	json.Unmarshal([]byte(out), &list)
	var got []string
	for _, cp := range list {
		got = append(got, cp.Prompt)
	}
	if strings.Join(got, "|") != "one|two again" || len(list[1].Files) != 1 {
		t.Errorf("child turns %q (%s), want one|two again with x.txt", got, out)
	}
}

// TestClaudeHookSessionEvents: subagent edits land in the parent's open
// turn; in scan mode SessionStart records a resume checkpoint once, and
// PowerShell keeps the manifest like Bash; prompt_id and the transcript
// place are recorded and a conversation rewind prints Claude's fork.
func TestClaudeHookSessionEvents(t *testing.T) {
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, tdir := t.TempDir(), t.TempDir()
	const sid = "33333333-3333-4333-8333-333333333333"
	tr := filepath.Join(tdir, sid+".jsonl")
	ev := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": sid, "transcript_path": tr, "cwd": ws, "hook_event_name": name}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	if code, _, errOut := ckptRun(t, ws, store, "--session", sid, "scan", "on"); code != 0 {
		t.Fatal(errOut)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a0\n"), 0o644)
	hookRunIn(t, store, ev("SessionStart", map[string]any{"source": "startup"}))
	hookRunIn(t, store, ev("SessionStart", map[string]any{"source": "resume"}))
	hookRunIn(t, store, ev("UserPromptSubmit", map[string]any{"prompt": "one", "prompt_id": "p-1"}))
	os.WriteFile(tr, []byte(transcriptLine("user", "u1", "p-1", "one")+transcriptLine("assistant", "a1", "", "ok")), 0o600)
	hookRunIn(t, store, ev("UserPromptSubmit", map[string]any{"prompt": "two", "prompt_id": "p-2"}))
	if s := hookRunIn(t, store, ev("PreToolUse", map[string]any{"agent_id": "ag-7", "agent_type": "general-purpose",
		"tool_name": "Write", "tool_input": map[string]any{"file_path": filepath.Join(ws, "a.txt")}})); s != "" {
		t.Errorf("subagent write: stderr %q", s)
	}
	if s := hookRunIn(t, store, ev("PreToolUse", map[string]any{"tool_name": "PowerShell", "tool_input": map[string]any{"command": "Remove-Item a.txt"}})); s != "" {
		t.Errorf("PowerShell: stderr %q", s)
	}
	code, out, _ := ckptRun(t, ws, store, "--session", sid, "list", "--json")
	var list []struct {
		Prompt string `json:"prompt"`
		Files  []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	json.Unmarshal([]byte(out), &list)
	var got []string
	for _, cp := range list {
		s := cp.Prompt
		for _, f := range cp.Files {
			s += " " + f.Path
		}
		got = append(got, s)
	}
	if want := resumeLabel + "|one|two a.txt"; code != 0 || strings.Join(got, "|") != want {
		t.Errorf("turns %q, want %q", got, want)
	}

	code, out, errOut := ckptRun(t, ws, store, "--session", sid, "--json", "rewind", "2", "--scope", "conversation")
	var rj struct {
		ClaudeResume hook.Resume `json:"claude_resume"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rj) != nil || rj.ClaudeResume.ResumeAt != "a1" || rj.ClaudeResume.Argv[len(rj.ClaudeResume.Argv)-1] != "two" {
		t.Fatalf("rewind --json: exit %d %s %s", code, out, errOut)
	}
	// The fork's events continue this session, at turn 2 again.
	fork := rj.ClaudeResume.Session
	b, _ := json.Marshal(map[string]any{"session_id": fork, "transcript_path": filepath.Join(tdir, fork+".jsonl"), "cwd": ws,
		"hook_event_name": "UserPromptSubmit", "prompt": "two, better", "prompt_id": "p-3"})
	var o, e bytes.Buffer
	if run(context.Background(), []string{"--store", store, "hook", "claude"}, bytes.NewReader(b), &o, &e) != 0 {
		t.Fatal(e.String())
	}
	_, out, _ = ckptRun(t, ws, store, "--session", sid, "log")
	if !strings.Contains(out, "two, better") || strings.Contains(out, "\ntwo\n") {
		t.Errorf("log after the fork's prompt:\n%s", out)
	}
	// Plain output: the command on stderr, the prompt on stdout.
	code, out, errOut = ckptRun(t, ws, store, "--session", sid, "rewind", "1", "--scope", "both")
	if code != 0 || !strings.Contains(errOut, "claude --resume "+sid+" --fork-session --session-id ") || !strings.Contains(errOut, "then continue it with: claude --resume ") || out != "one\n" {
		t.Errorf("rewind 1: exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	// Statusline from Claude's JSON.
	var so, se bytes.Buffer
	in := `{"session_id":"` + sid + `","cwd":"` + ws + `","workspace":{"current_dir":"` + ws + `","project_dir":"` + ws + `"}}`
	run(context.Background(), []string{"--store", store, "statusline"}, strings.NewReader(in), &so, &se)
	if so.String() != "ckpt: 1 checkpoint · scan on · undo ready\n" || se.Len() > 0 {
		t.Errorf("statusline %q, stderr %q", so.String(), se.String())
	}
	so.Reset()
	run(context.Background(), []string{"--store", store, "statusline"}, strings.NewReader(`{"session_id":"nope-1","cwd":"/nowhere"}`), &so, &se)
	if so.String() != "ckpt: no checkpoints yet\n" || se.Len() > 0 {
		t.Errorf("statusline of an unknown session %q, stderr %q", so.String(), se.String())
	}
}

// TestClaudeForkAdoptedFromAnOlderStore: a store an older ckpt wrote keeps
// a session's pending first prompt as a file (sessions/ID/claude-adopt).
// The first tool call still adopts the fork, and the file, recorded in the
// index first, goes.
func TestClaudeForkAdoptedFromAnOlderStore(t *testing.T) {
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, tdir := t.TempDir(), t.TempDir()
	const parent, child = "11111111-1111-4111-8111-111111111111", "33333333-3333-4333-8333-333333333333"
	ptr, ctr := filepath.Join(tdir, parent+".jsonl"), filepath.Join(tdir, child+".jsonl")
	ev := func(sid, tr, name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": sid, "transcript_path": tr, "cwd": ws, "hook_event_name": name}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	hookRunIn(t, store, ev(parent, ptr, "UserPromptSubmit", map[string]any{"prompt": "one", "prompt_id": "p-1"}))
	tr := transcriptLine("user", "u1", "p-1", "one") + transcriptLine("assistant", "a1", "", "done one")
	os.WriteFile(ptr, []byte(tr), 0o600)
	hookRunIn(t, store, ev(parent, ptr, "UserPromptSubmit", map[string]any{"prompt": "two", "prompt_id": "p-2"}))

	// The child's first prompt, as an older ckpt recorded it: its turn,
	// and the pending prompt in a file beside the index.
	c, err := controller.Open(context.Background(), controller.Options{Workspace: ws, Session: child, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginTurn(context.Background(), "two again", controller.TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	legacy := filepath.Join(store, "sessions", child, "claude-adopt")
	if err := os.WriteFile(legacy, []byte(`{"prompt_id":"p-3","prompt":"two again"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(ctr, []byte(tr+transcriptLine("user", "u3", "p-3", "two again")), 0o600)
	os.WriteFile(filepath.Join(ws, "x.txt"), []byte("x"), 0o644)
	if s := hookRunIn(t, store, ev(child, ctr, "PreToolUse", map[string]any{"tool_name": "Edit", "tool_input": map[string]any{"file_path": filepath.Join(ws, "x.txt")}})); s != "" {
		t.Errorf("stderr %q", s)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("claude-adopt after the adoption: %v, want gone", err)
	}
	code, out, errOut := ckptRun(t, ws, store, "--session", child, "list", "--json")
	if code != 0 {
		t.Fatalf("list: %d %s", code, errOut)
	}
	var list []struct {
		Prompt string `json:"prompt"`
	}
	json.Unmarshal([]byte(out), &list)
	var got []string
	for _, cp := range list {
		got = append(got, cp.Prompt)
	}
	if strings.Join(got, "|") != "one|two again" {
		t.Errorf("child turns %q, want one|two again (a fork of the parent)", got)
	}
}

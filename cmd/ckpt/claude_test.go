package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
	os.WriteFile(ctr, []byte(tr+transcriptLine("user", "u3", "p-3", "two again")), 0o600)
	if s := hookRunIn(t, store, ev(child, ctr, "PreToolUse", map[string]any{"tool_name": "Edit", "tool_input": map[string]any{"file_path": filepath.Join(ws, "x.txt")}})); s != "" {
		t.Errorf("stderr %q", s)
	}
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

func TestAgentPath(t *testing.T) {
	for _, tc := range []struct {
		in      string
		windows bool
		want    string
		abs     bool
	}{
		{`C:\proj\x.go`, true, `C:\proj\x.go`, true},
		{`C:/proj/x.go`, true, `C:\proj\x.go`, true},
		{`/c/proj/x.go`, true, `C:\proj\x.go`, true},
		{`/d`, true, `D:\`, true},
		{`\\server\share\x.go`, true, `\\server\share\x.go`, true},
		{`src\x.go`, true, `src\x.go`, false},
		{`src/x.go`, true, `src\x.go`, false},
		{`/proj/x.go`, true, `\proj\x.go`, false},
		{`/proj/x.go`, false, `/proj/x.go`, true},
		{`C:\proj\x.go`, false, `C:\proj\x.go`, false},
		{`src/x.go`, false, `src/x.go`, false},
	} {
		got, abs := agentPath(tc.in, tc.windows)
		if got != tc.want || abs != tc.abs {
			t.Errorf("agentPath(%q, windows=%v) = %q, %v; want %q, %v", tc.in, tc.windows, got, abs, tc.want, tc.abs)
		}
	}
}

// TestDecodeHookClaudeCurrent feeds decodeHook the shapes Claude Code sends
// now (https://code.claude.com/docs/en/hooks): PowerShell as a shell, Edit
// and the older MultiEdit, subagent fields, prompt_id, SessionStart sources.
func TestDecodeHookClaudeCurrent(t *testing.T) {
	const base = `"session_id":"s1","transcript_path":"/t/s1.jsonl","cwd":"/w"`
	for _, tc := range []struct {
		name, json string
		paths      []string
		shell      bool
		start      bool
		none       bool
	}{
		{"powershell", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"PowerShell","tool_input":{"command":"Remove-Item x.txt"}}`, nil, true, false, false},
		{"bash", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm x"}}`, nil, true, false, false},
		{"edit", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"/w/a.go","old_string":"a","new_string":"b"}}`, []string{"/w/a.go"}, false, false, false},
		{"multiedit from an older version", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"MultiEdit","tool_input":{"file_path":"/w/b.go","edits":[]}}`, []string{"/w/b.go"}, false, false, false},
		{"subagent write", `{` + base + `,"hook_event_name":"PreToolUse","agent_id":"ag-1","agent_type":"Explore","prompt_id":"p1","tool_name":"Write","tool_input":{"file_path":"c.go","content":""}}`, []string{"c.go"}, false, false, false},
		{"read", `{` + base + `,"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/a.go"}}`, nil, false, false, true},
		{"startup", `{` + base + `,"hook_event_name":"SessionStart","source":"startup"}`, nil, false, true, false},
		{"resume", `{` + base + `,"hook_event_name":"SessionStart","source":"resume"}`, nil, false, true, false},
		{"fork", `{` + base + `,"hook_event_name":"SessionStart","source":"fork"}`, nil, false, true, false},
		{"clear", `{` + base + `,"hook_event_name":"SessionStart","source":"clear"}`, nil, false, false, true},
		{"compact", `{` + base + `,"hook_event_name":"SessionStart","source":"compact"}`, nil, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, f := decodeHook([]byte(tc.json), "claude")
			if f != nil {
				t.Fatalf("failure %q", f.msg)
			}
			if strings.Join(plan.paths, ",") != strings.Join(tc.paths, ",") || plan.shell != tc.shell || plan.start != tc.start || plan.none != tc.none {
				t.Errorf("plan paths %q shell %v start %v none %v; want %q %v %v %v", plan.paths, plan.shell, plan.start, plan.none, tc.paths, tc.shell, tc.start, tc.none)
			}
		})
	}
	plan, _ := decodeHook([]byte(`{`+base+`,"hook_event_name":"UserPromptSubmit","prompt_id":"p-9","prompt":"hi"}`), "claude")
	if plan.ev.PromptID != "p-9" {
		t.Errorf("prompt_id = %q, want p-9", plan.ev.PromptID)
	}
}

func TestLastAssistantIn(t *testing.T) {
	tr := transcriptLine("user", "u1", "p-1", "one") +
		transcriptLine("assistant", "a1", "", "x") +
		`{"type":"assistant","uuid":"side","isSidechain":true}` + "\n" +
		"not json\n" +
		transcriptLine("user", "u2", "p-2", "two") +
		`{"type":"user","uuid":"u2r","promptId":"p-2","message":{"content":[{"type":"tool_result","content":"ok"}]}}` + "\n" +
		transcriptLine("assistant", "a2", "", "y")
	// A 2.1.330 fork: every copied user entry has the new promptId.
	fork := transcriptLine("user", "u1", "p-9", "one") + transcriptLine("assistant", "a1", "", "x") +
		`{"type":"user","uuid":"u9","promptId":"p-9","message":{"content":[{"type":"text","text":"again"}]}}` + "\n"
	for _, tc := range []struct {
		tr     string
		prompt *pendingPrompt
		want   string
		found  bool
	}{
		{tr, nil, "a2", true},
		{tr, &pendingPrompt{PromptID: "p-1", Prompt: "one"}, "", true},
		{tr, &pendingPrompt{PromptID: "p-2", Prompt: "two"}, "a1", true},
		{tr, &pendingPrompt{PromptID: "p-3", Prompt: "three"}, "", false},
		{tr, &pendingPrompt{PromptID: "p-2", Prompt: "other text"}, "", false},
		{fork, &pendingPrompt{PromptID: "p-9", Prompt: "again"}, "a1", true},
	} {
		got, found, err := lastAssistantIn(strings.NewReader(tc.tr), tc.prompt)
		if err != nil || got != tc.want || found != tc.found {
			t.Errorf("lastAssistantIn(%+v) = %q, %v, %v; want %q, %v", tc.prompt, got, found, err, tc.want, tc.found)
		}
	}
}

func TestPlanClaudeResume(t *testing.T) {
	const sid = "11111111-1111-4111-8111-111111111111"
	r := planClaudeResume(sid, 2, claudeTurn{ResumeAt: "a1"}, "it's two", []string{"--model", "opus"})
	want := []string{"claude", "--model", "opus", "--resume", sid, "--fork-session", "--session-id", r.Session, "--resume-session-at", "a1", "-p", "it's two"}
	if strings.Join(r.Argv, "\x00") != strings.Join(want, "\x00") || !r.Exact {
		t.Errorf("argv %q exact %v; want %q", r.Argv, r.Exact, want)
	}
	if !strings.HasSuffix(r.Command, `-p 'it'\''s two'`) || r.Then != "claude --model opus --resume "+r.Session {
		t.Errorf("command %s; then %s", r.Command, r.Then)
	}
	if len(r.Session) != 36 || r.Session[14] != '4' || r.Session == planClaudeResume(sid, 2, claudeTurn{}, "x", nil).Session {
		t.Errorf("session %q is not a fresh v4 UUID", r.Session)
	}
	r0 := planClaudeResume(sid, 0, claudeTurn{}, "first", nil)
	if strings.Join(r0.Argv, " ") != "claude --session-id "+r0.Session+" -p first" || !r0.Exact {
		t.Errorf("turn 0: %q", r0.Argv)
	}
	rn := planClaudeResume(sid, 3, claudeTurn{}, "later", nil)
	if strings.Join(rn.Argv, " ") != "claude --resume "+sid+" --fork-session --session-id "+rn.Session || rn.Exact {
		t.Errorf("no record: %q exact %v", rn.Argv, rn.Exact)
	}
}

func TestDecodeHookWindowsPaths(t *testing.T) {
	defer func(w bool) { onWindows = w }(onWindows)
	onWindows = true
	plan, f := decodeHook([]byte(`{"session_id":"s1","cwd":"C:\\proj","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"C:/proj/src/x.go"}}`), "claude")
	if f != nil {
		t.Fatal(f.msg)
	}
	if plan.ev.Cwd != `C:\proj` || strings.Join(plan.paths, ",") != `C:\proj\src\x.go` {
		t.Errorf("cwd %q paths %q", plan.ev.Cwd, plan.paths)
	}
	// PowerShell only (no Bash tool on Windows): a shell.
	plan, f = decodeHook([]byte(`{"session_id":"s1","cwd":"/c/proj","hook_event_name":"PreToolUse","tool_name":"PowerShell","tool_input":{"command":"del x.go"}}`), "claude")
	if f != nil || !plan.shell || plan.ev.Cwd != `C:\proj` {
		t.Errorf("PowerShell: %+v %v", plan, f)
	}
	if _, f := decodeHook([]byte(`{"session_id":"s1","cwd":"proj","hook_event_name":"UserPromptSubmit","prompt":"x"}`), "claude"); f == nil {
		t.Error("a relative cwd was accepted")
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
		ClaudeResume claudeResume `json:"claude_resume"`
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

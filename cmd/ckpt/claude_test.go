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

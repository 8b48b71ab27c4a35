package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkProcessHookClaude: `ckpt hook claude` per event as a whole
// process, fed a PreToolUse Edit of a new 8 KiB file each time (content no
// other file has, so each stores a new blob, as benchSource says), with a
// UserPromptSubmit every 20 events (target p50 ≤ 20 ms); timeCmds reports
// CPU time and page faults beside the wall times.
func BenchmarkProcessHookClaude(b *testing.B) {
	bin := buildBinary(b)
	ws, store := b.TempDir(), b.TempDir()
	const session = "5f0c6a2e-8d7b-4c1a-9e3f-2b4d6a8c0e1f"
	events := make([]string, 0, b.N+1)
	events = append(events, hookEventJSON(ws, session, "UserPromptSubmit", "", "bench"))
	for i := 0; i < b.N; i++ {
		name := filepath.Join(ws, fmt.Sprintf("f%05d.go", i))
		if err := os.WriteFile(name, benchSource(i), 0o644); err != nil {
			b.Fatal(err)
		}
		if i > 0 && i%20 == 0 {
			events = append(events, hookEventJSON(ws, session, "UserPromptSubmit", "", fmt.Sprintf("prompt %d", i)))
			continue
		}
		events = append(events, hookEventJSON(ws, session, "PreToolUse", name, ""))
	}
	env := []string{"CKPT_HOME=" + store, "HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH")} // no CLAUDE_PROJECT_DIR
	cmds := make([]*exec.Cmd, 0, len(events))
	for _, ev := range events {
		cmd := exec.Command(bin, "hook", "claude", "--strict")
		cmd.Dir, cmd.Env, cmd.Stdin = ws, env, strings.NewReader(ev)
		cmds = append(cmds, cmd)
	}
	timeCmds(b, cmds)
}

func hookEventJSON(ws, session, event, path, prompt string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	common := `"session_id":` + q(session) + `,"transcript_path":"/t.jsonl","cwd":` + q(ws) + `,"hook_event_name":` + q(event)
	if event == "UserPromptSubmit" {
		return "{" + common + `,"prompt":` + q(prompt) + "}"
	}
	return "{" + common + `,"tool_name":"Edit","tool_input":{"file_path":` + q(path) + `,"old_string":"x","new_string":"y"},"tool_use_id":"toolu_1"}`
}

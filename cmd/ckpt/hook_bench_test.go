package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkProcessHookClaude: `ckpt hook claude` per event as a whole
// process, fed a PreToolUse Edit of a new 8 KiB file each time, with a
// UserPromptSubmit every 20 events (target p50 ≤ 20 ms).
func BenchmarkProcessHookClaude(b *testing.B) {
	bin := buildBinary(b)
	ws, store := b.TempDir(), b.TempDir()
	const session = "5f0c6a2e-8d7b-4c1a-9e3f-2b4d6a8c0e1f"
	events := make([]string, 0, b.N+1)
	events = append(events, hookEventJSON(ws, session, "UserPromptSubmit", "", "bench"))
	for i := 0; i < b.N; i++ {
		name := filepath.Join(ws, fmt.Sprintf("f%05d.go", i))
		if err := os.WriteFile(name, bytes.Repeat([]byte("package x // 8 KiB of source\n"), 8<<10/29), 0o644); err != nil {
			b.Fatal(err)
		}
		if i > 0 && i%20 == 0 {
			events = append(events, hookEventJSON(ws, session, "UserPromptSubmit", "", fmt.Sprintf("prompt %d", i)))
			continue
		}
		events = append(events, hookEventJSON(ws, session, "PreToolUse", name, ""))
	}
	env := []string{"CKPT_HOME=" + store, "HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH")} // no CLAUDE_PROJECT_DIR
	times := make([]time.Duration, 0, len(events))
	b.ResetTimer()
	for _, ev := range events {
		cmd := exec.Command(bin, "hook", "claude", "--strict")
		cmd.Dir, cmd.Env, cmd.Stdin = ws, env, strings.NewReader(ev)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		err := cmd.Run()
		times = append(times, time.Since(start))
		if err != nil || stderr.Len() > 0 {
			b.Fatalf("ckpt hook claude: %v: %s", err, stderr.String())
		}
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*95/100].Microseconds())/1000, "p95-ms")
}

func hookEventJSON(ws, session, event, path, prompt string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	common := `"session_id":` + q(session) + `,"transcript_path":"/t.jsonl","cwd":` + q(ws) + `,"hook_event_name":` + q(event)
	if event == "UserPromptSubmit" {
		return "{" + common + `,"prompt":` + q(prompt) + "}"
	}
	return "{" + common + `,"tool_name":"Edit","tool_input":{"file_path":` + q(path) + `,"old_string":"x","new_string":"y"},"tool_use_id":"toolu_1"}`
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt/ckpt/agent/hook"
)

// runHookEvent runs cmd (a `ckpt hook claude`) with ev on stdin in dir,
// and fails the test unless it exits 0.
func runHookEvent(t *testing.T, cmd *exec.Cmd, dir string, ev map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(ev)
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(b)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("hook %v: %v\n%s%s", ev["hook_event_name"], err, out.String(), errb.String())
	}
	return errb.String()
}

// waitSynced waits until no background sync of store runs and its log
// holds want, and returns the log. It waits up to two minutes: a guard
// against a hang, not a deadline for a detached ckpt process syncing with
// a real S3 server on a loaded machine (600 polls were 30 s).
func waitSynced(t *testing.T, store, want string) string {
	t.Helper()
	var log []byte
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		log, _ = os.ReadFile(filepath.Join(store, hook.SyncLogFile))
		if bytes.Contains(log, []byte(want)) && !hook.Running(store, hook.SyncLockFile) {
			return string(log)
		}
	}
	t.Fatalf("no finished background sync with %q in %s:\n%s", want, hook.SyncLogFile, log)
	return ""
}

// TestHookStopSyncsInBackground (issue 16): with a remote configured, the
// Stop and SessionEnd hooks start `ckpt sync` as a detached process whose
// output goes to STORE/sync.log, one at a time per store; with none
// configured nothing happens. Through the real binary and a real S3
// server (versitygw; skipped without it).
func TestHookStopSyncsInBackground(t *testing.T) {
	r := newRemoteRig(t)
	ws := filepath.Join(r.root, "project")
	os.MkdirAll(ws, 0o755)
	storeA := filepath.Join(r.root, "A")
	const sid = "9d1c7a52-0f4e-4b6a-8c3d-2e5f6a7b8c9d"
	ev := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": sid, "cwd": ws, "hook_event_name": name, "transcript_path": ""}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("before\n"), 0o644)
	runHookEvent(t, r.cmd("A", "hook", "claude"), ws, ev("UserPromptSubmit", map[string]any{"prompt": "edit a"}))
	runHookEvent(t, r.cmd("A", "hook", "claude"), ws, ev("PreToolUse", map[string]any{"tool_name": "Edit",
		"tool_input": map[string]any{"file_path": filepath.Join(ws, "a.txt")}}))
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("after\n"), 0o644)

	// Another background sync holds the store's lock: Stop starts none.
	held, ok, err := hook.TryLock(filepath.Join(storeA, hook.SyncLockFile))
	if err != nil || !ok {
		t.Fatalf("take the sync lock: %v %v", ok, err)
	}
	runHookEvent(t, r.cmd("A", "hook", "claude"), ws, ev("Stop", nil))
	held.Close()
	if _, err := os.Stat(filepath.Join(storeA, hook.SyncLogFile)); err == nil {
		t.Fatal("Stop started a sync while another held the lock")
	}

	// Stop: the hook returns at once, the sync runs on and uploads.
	start := time.Now()
	stderr := runHookEvent(t, r.cmd("A", "hook", "claude"), ws, ev("Stop", nil))
	if stderr != "" {
		t.Errorf("Stop said %q; want nothing", stderr)
	}
	t.Logf("Stop hook returned after %v", time.Since(start))
	log := waitSynced(t, storeA, "uploaded")
	if !strings.Contains(log, sid+": uploaded") {
		t.Errorf("sync.log does not report the session's upload:\n%s", log)
	}
	if out := r.run("B", "sessions", "--remote"); !strings.Contains(out, sid) {
		t.Fatalf("after the background sync the remote does not list %s:\n%s", sid, out)
	}

	// SessionEnd too, after more was recorded.
	runHookEvent(t, r.cmd("A", "hook", "claude"), ws, ev("UserPromptSubmit", map[string]any{"prompt": "second"}))
	runHookEvent(t, r.cmd("A", "hook", "claude"), ws, ev("SessionEnd", map[string]any{"reason": "exit"}))
	waitSynced(t, storeA, "uploaded")
	wsB := filepath.Join(r.root, "elsewhere", "project")
	if out := r.run("B", "pull", sid, "--workspace", wsB); !strings.Contains(out, "2 turns") {
		t.Fatalf("pull after SessionEnd's sync: %s", out)
	}

	// No remote: nothing happens.
	cmd := r.cmd("C", "hook", "claude")
	var env []string
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "CKPT_REMOTE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	storeC := filepath.Join(r.root, "C")
	runHookEvent(t, cmd, ws, map[string]any{"session_id": "other", "cwd": ws, "hook_event_name": "Stop"})
	for _, f := range []string{hook.SyncLogFile, hook.SyncLockFile} {
		if _, err := os.Stat(filepath.Join(storeC, f)); err == nil {
			t.Errorf("Stop without a remote made %s", f)
		}
	}
}

// TestAgentEndSyncsInBackground (issue 16): another agent's own end
// events, Gemini CLI's AfterAgent and SessionEnd, start the same
// background `ckpt sync` as Claude's Stop, answer what the agent reads
// ({}), and upload what the session recorded; with no remote nothing
// happens. Through the real binary and a real S3 server (versitygw;
// skipped without it).
func TestAgentEndSyncsInBackground(t *testing.T) {
	r := newRemoteRig(t)
	ws := filepath.Join(r.root, "project")
	os.MkdirAll(ws, 0o755)
	storeA := filepath.Join(r.root, "A")
	const sid = "5e0c7a1d-2b3f-4c6d-9e8f-a1b2c3d4e5f6"
	ev := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": sid, "cwd": ws, "hook_event_name": name,
			"transcript_path": "", "timestamp": "2026-11-23T14:00:00.000Z"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	// gemini runs `ckpt hook gemini`, which must print {} (and only that)
	// on stdout.
	runGemini := func(store string, env []string, e map[string]any) string {
		t.Helper()
		cmd := r.cmd(store, "hook", "gemini")
		if env != nil {
			cmd.Env = env
		}
		b, _ := json.Marshal(e)
		cmd.Dir, cmd.Stdin = ws, bytes.NewReader(b)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("hook gemini %v: %v\n%s%s", e["hook_event_name"], err, out.String(), errb.String())
		}
		if out.String() != "{}\n" {
			t.Errorf("hook gemini %v printed %q; want {}", e["hook_event_name"], out.String())
		}
		return errb.String()
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("before\n"), 0o644)
	runGemini("A", nil, ev("BeforeAgent", map[string]any{"prompt": "edit a"}))
	runGemini("A", nil, ev("BeforeTool", map[string]any{"tool_name": "write_file",
		"tool_input": map[string]any{"file_path": filepath.Join(ws, "a.txt"), "content": "after\n"}}))
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("after\n"), 0o644)

	if stderr := runGemini("A", nil, ev("AfterAgent", map[string]any{"prompt": "edit a", "prompt_response": "Done.", "stop_hook_active": false})); stderr != "" {
		t.Errorf("AfterAgent said %q; want nothing", stderr)
	}
	log := waitSynced(t, storeA, "uploaded")
	if !strings.Contains(log, sid+": uploaded") {
		t.Errorf("sync.log does not report the session's upload:\n%s", log)
	}
	if out := r.run("B", "sessions", "--remote"); !strings.Contains(out, sid) {
		t.Fatalf("after AfterAgent's sync the remote does not list %s:\n%s", sid, out)
	}

	// SessionEnd, after another turn: the remote has both turns.
	runGemini("A", nil, ev("BeforeAgent", map[string]any{"prompt": "second"}))
	runGemini("A", nil, ev("SessionEnd", map[string]any{"reason": "exit"}))
	waitSynced(t, storeA, "uploaded")
	wsB := filepath.Join(r.root, "elsewhere", "project")
	if out := r.run("B", "pull", sid, "--workspace", wsB); !strings.Contains(out, "2 turns") {
		t.Fatalf("pull after SessionEnd's sync: %s", out)
	}

	// No remote: the same events start nothing.
	var env []string
	for _, kv := range r.env() {
		if !strings.HasPrefix(kv, "CKPT_REMOTE=") {
			env = append(env, kv)
		}
	}
	storeC := filepath.Join(r.root, "C")
	runGemini("C", env, ev("AfterAgent", nil))
	runGemini("C", env, ev("SessionEnd", map[string]any{"reason": "exit"}))
	for _, f := range []string{hook.SyncLogFile, hook.SyncLockFile} {
		if _, err := os.Stat(filepath.Join(storeC, f)); err == nil {
			t.Errorf("AfterAgent/SessionEnd without a remote made %s", f)
		}
	}
}

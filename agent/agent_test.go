package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentDecode feeds each documented fixture (testdata/hooks) and a few
// edge cases to the agent's decoder and checks what it plans: no store is
// touched here; the scripts in testdata/agentscript run the whole hook.
func TestAgentDecode(t *testing.T) {
	fixture := func(agent, name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "hooks", agent, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.ReplaceAll(string(b), "@WORK@", "/w"))
	}
	type want struct {
		event string // "" = nothing to do
		paths string // comma-separated
		shell bool
		fail  string // a substring of the failure
		// sync: the event ends the answer or the session, so a
		// background `ckpt sync` starts (when the store has a remote).
		sync bool
	}
	cases := []struct {
		agent, name string
		data        []byte
		want        want
	}{
		{"codex", "prompt", nil, want{event: "UserPromptSubmit"}},
		{"codex", "apply_patch", nil, want{event: "PreToolUse", paths: "new.txt,a.txt,b.txt,c.txt,sub/d.txt"}},
		{"codex", "bash", nil, want{event: "PreToolUse", shell: true}},
		{"codex", "bash_patch", nil, want{event: "PreToolUse", paths: "made.txt,a.txt", shell: true}},
		{"codex", "post", nil, want{}},
		{"codex", "stop", nil, want{sync: true}},
		{"gemini", "before_agent", nil, want{event: "UserPromptSubmit"}},
		{"gemini", "write_file", nil, want{event: "PreToolUse", paths: "/w/new.txt"}},
		{"gemini", "shell", nil, want{event: "PreToolUse", shell: true}},
		{"gemini", "read", nil, want{}},
		{"gemini", "after_agent", nil, want{sync: true}},
		{"gemini", "session_end", nil, want{sync: true}},
		{"cursor", "before_submit_prompt", nil, want{event: "UserPromptSubmit"}},
		{"cursor", "pre_tool_use_write", nil, want{event: "PreToolUse", paths: "new.txt"}},
		{"cursor", "before_shell_execution", nil, want{event: "PreToolUse", shell: true}},
		{"cursor", "after_file_edit", nil, want{}},
		{"cursor", "stop", nil, want{sync: true}},
		{"cursor", "session_end", nil, want{sync: true}},
		{"cursor", "read", []byte(`{"hook_event_name":"preToolUse","conversation_id":"c1","workspace_roots":["/w"],"tool_name":"Read","tool_input":{"file_path":"a.txt"}}`), want{}},
		{"copilot", "user_prompt_submitted", nil, want{event: "UserPromptSubmit"}},
		{"copilot", "pre_tool_use_create", nil, want{event: "PreToolUse", paths: "/w/new.txt"}},
		{"copilot", "pre_tool_use_bash", nil, want{event: "PreToolUse", shell: true}},
		{"copilot", "post_tool_use", nil, want{}},
		{"copilot", "agent_stop", nil, want{sync: true}},
		{"copilot", "session_end", nil, want{sync: true}},
		{"copilot", "session_start", []byte(`{"sessionId":"s1","timestamp":1,"cwd":"/w","source":"new"}`), want{}},
		{"copilot", "pascal-stop", []byte(`{"hook_event_name":"Stop","session_id":"s1","cwd":"/w"}`), want{sync: true}},
		{"copilot", "pascal", []byte(`{"hook_event_name":"PreToolUse","session_id":"s1","cwd":"/w","tool_name":"create","tool_input":{"path":"x.go"}}`), want{event: "PreToolUse", paths: "x.go"}},
		{"cline", "user_prompt_submit", nil, want{event: "UserPromptSubmit"}},
		{"cline", "apply_patch", nil, want{event: "PreToolUse", paths: "b.txt,c.txt,sub/d.txt"}},
		{"cline", "run_commands", nil, want{event: "PreToolUse", shell: true}},
		{"cline", "cli_agent_start", nil, want{event: "UserPromptSubmit"}},
		{"cline", "cli_tool_call", nil, want{event: "PreToolUse", paths: "new.txt,a.txt"}},
		{"cline", "cli_agent_end", nil, want{sync: true}},
		{"cline", "task_complete", nil, want{sync: true}},
		{"cline", "task_cancel", []byte(`{"hookName":"TaskCancel","taskId":"1","workspaceRoots":["/w"]}`), want{}},
		{"cline", "cli_prompt_submit", []byte(`{"hookName":"prompt_submit","taskId":"conv_1","workspaceRoots":["/w"],"userPromptSubmit":{"prompt":"hi","attachments":[]}}`), want{event: "UserPromptSubmit"}},
		{"cline", "future", []byte(`{"hookName":"Future","taskId":"1","workspaceRoots":["/w"]}`), want{fail: `unknown event "Future"`}},
		{"windsurf", "pre_user_prompt", nil, want{event: "UserPromptSubmit"}},
		{"windsurf", "pre_write_code_a", nil, want{event: "PreToolUse", paths: "/w/a.txt"}},
		{"windsurf", "pre_run_command", nil, want{event: "PreToolUse", shell: true}},
		{"windsurf", "post_cascade_response", nil, want{sync: true}},
		{"windsurf", "post_write_code", []byte(`{"agent_action_name":"post_write_code","trajectory_id":"t","tool_info":{"file_path":"/w/a"}}`), want{}},
		{"windsurf", "nopath", []byte(`{"agent_action_name":"pre_write_code","trajectory_id":"t","tool_info":{}}`), want{fail: "no tool_info.file_path"}},
		{"opencode", "patch", nil, want{event: "PreToolUse", paths: "b.txt,c.txt,sub/d.txt"}},
		{"opencode", "edit", nil, want{event: "PreToolUse", paths: "/w/a.txt"}},
		{"opencode", "bash", nil, want{event: "PreToolUse", shell: true}},
		{"opencode", "session_idle", nil, want{sync: true}},
		{"opencode", "relative-cwd", []byte(`{"hook_event_name":"PreToolUse","session_id":"s","cwd":"w","tool_name":"write","tool_input":{"filePath":"a"}}`), want{fail: "not absolute"}},
		{"pi", "prompt", nil, want{event: "UserPromptSubmit"}},
		{"pi", "write", nil, want{event: "PreToolUse", paths: "new.txt"}},
		{"pi", "edit", nil, want{event: "PreToolUse", paths: "/w/a.txt"}},
		{"pi", "edit_at", nil, want{event: "PreToolUse", paths: "b.txt"}},
		{"pi", "bash", nil, want{event: "PreToolUse", shell: true}},
		{"pi", "read", nil, want{}},
		{"pi", "session_start", nil, want{event: "SessionStart"}},
		{"pi", "stop", nil, want{sync: true}},
		{"pi", "session_start_bad", []byte(`{"hook_event_name":"SessionStart","source":"later","session_id":"s","cwd":"/w"}`), want{fail: "no known source"}},
		{"pi", "agent_end", []byte(`{"hook_event_name":"agent_end","session_id":"s","cwd":"/w"}`), want{fail: `unknown event "agent_end"`}},
		{"qwen", "user_prompt_submit", nil, want{event: "UserPromptSubmit"}},
		{"qwen", "tool_results", nil, want{}},
		{"qwen", "write_file", nil, want{event: "PreToolUse", paths: "/w/new.txt"}},
		{"qwen", "notebook_edit", nil, want{event: "PreToolUse", paths: "/w/nb.ipynb"}},
		{"qwen", "shell", nil, want{event: "PreToolUse", shell: true}},
		{"qwen", "read", nil, want{}},
		{"qwen", "stop", nil, want{sync: true}},
		{"kilo", "edit", []byte(`{"hook_event_name":"PreToolUse","session_id":"ses_1","cwd":"/w","tool_name":"edit","tool_input":{"filePath":"/w/a.txt"}}`), want{event: "PreToolUse", paths: "/w/a.txt"}},
		{"kilo", "idle", []byte(`{"hook_event_name":"Stop","session_id":"ses_1","cwd":"/w"}`), want{sync: true}},
		{"amp", "prompt", []byte(`{"hook_event_name":"UserPromptSubmit","session_id":"T-1","cwd":"/w","prompt":"hi"}`), want{event: "UserPromptSubmit"}},
		{"amp", "helper-paths", []byte(`{"hook_event_name":"PreToolUse","session_id":"T-1","cwd":"/w","tool_name":"apply_patch","tool_input":{},"paths":["/w/a.txt","/w/b.txt"],"shell":false}`), want{event: "PreToolUse", paths: "/w/a.txt,/w/b.txt"}},
		{"amp", "sed-i", []byte(`{"hook_event_name":"PreToolUse","session_id":"T-1","cwd":"/w","tool_name":"Bash","tool_input":{"cmd":"sed -i s/a/b/ a.txt"},"paths":["/w/a.txt"],"shell":true}`), want{event: "PreToolUse", paths: "/w/a.txt", shell: true}},
		{"amp", "read", []byte(`{"hook_event_name":"PreToolUse","session_id":"T-1","cwd":"/w","tool_name":"Read","tool_input":{"path":"/w/a.txt"},"paths":[],"shell":false}`), want{}},
		{"amp", "no-helpers", []byte(`{"hook_event_name":"PreToolUse","session_id":"T-1","cwd":"/w","tool_name":"edit_file","tool_input":{"path":"/w/a.txt"}}`), want{event: "PreToolUse", paths: "/w/a.txt"}},
		{"amp", "end", []byte(`{"hook_event_name":"Stop","session_id":"T-1","cwd":"/w"}`), want{sync: true}},
		{"gemini", "bad-session", []byte(`{"hook_event_name":"BeforeAgent","session_id":"a/b","cwd":"/w","prompt":"x"}`), want{fail: "session id"}},
	}
	for _, c := range cases {
		t.Run(c.agent+"/"+c.name, func(t *testing.T) {
			data := c.data
			if data == nil {
				data = fixture(c.agent, c.name)
			}
			plan, f := registry[c.agent].Decode(data)
			if c.want.fail != "" {
				if f == nil || !strings.Contains(f.Msg, c.want.fail) {
					t.Fatalf("failure = %+v, want one containing %q", f, c.want.fail)
				}
				return
			}
			if f != nil {
				t.Fatalf("unexpected failure: %s", f.Msg)
			}
			if plan.Sync != c.want.sync {
				t.Errorf("sync = %v, want %v", plan.Sync, c.want.sync)
			}
			if c.want.event == "" {
				if !plan.None {
					t.Fatalf("plan = %+v, want nothing to do", plan)
				}
				return
			}
			if plan.None || plan.Event.HookEventName != c.want.event {
				t.Fatalf("event = %q (none=%v), want %q", plan.Event.HookEventName, plan.None, c.want.event)
			}
			if got := strings.Join(plan.Paths, ","); got != c.want.paths {
				t.Errorf("paths = %q, want %q", got, c.want.paths)
			}
			if plan.Shell != c.want.shell {
				t.Errorf("shell = %v, want %v", plan.Shell, c.want.shell)
			}
		})
	}
}

// FuzzAgentDecode: no agent's decoder panics on any input, and a plan to
// capture names only non-empty paths.
func FuzzAgentDecode(f *testing.F) {
	dirs, _ := os.ReadDir(filepath.Join("testdata", "hooks"))
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join("testdata", "hooks", d.Name(), "*.json"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(strings.ReplaceAll(string(b), "@WORK@", "/w"))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data string) {
		for name, s := range registry {
			plan, fail := s.Decode([]byte(data))
			if fail != nil || plan.None {
				continue
			}
			for _, p := range plan.Paths {
				if p == "" {
					t.Fatalf("%s: empty path in %+v", name, plan)
				}
			}
			if len(plan.Paths) == 0 && !plan.Shell && !plan.Start && plan.Event.HookEventName != "UserPromptSubmit" {
				t.Fatalf("%s: a plan with nothing to do: %+v", name, plan)
			}
		}
	})
}

func TestPatchPaths(t *testing.T) {
	patch := "*** Begin Patch\r\n*** Add File: x/new.go\r\n+package x\n*** Update File: a.go\n@@\n-a\n+b\n" +
		"*** Delete File: old.go\n*** Update File: from.go\n*** Move to: to.go\n+*** Add File: inside-content.go\n*** End Patch\n"
	got := patchPaths(patch)
	want := []string{"x/new.go", "a.go", "old.go", "from.go", "to.go"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("patchPaths = %q, want %q", got, want)
	}
}

package agent

import (
	"encoding/json"
	"path/filepath"
)

// Qwen Code: hooks in .qwen/settings.json (~/.qwen/settings.json with
// --user), Claude-style matcher groups and Claude's event names.
// UserPromptSubmit fires before every model request that carries new
// input, tool results included (checked with Qwen Code 0.24.4: the
// continuation after a tool call sends prompt ""); only the user's own
// submission opens a turn: submitted_prompt where Qwen Code declares it,
// else a non-empty prompt. PreToolUse carries write_file and edit with
// tool_input.file_path, notebook_edit with notebook_path, and
// run_shell_command. Stop and SessionEnd start a background sync when the
// store has a remote. Every hook answers {} on stdout: a command hook's
// stdout that is not a JSON object would be added to the model's context.
// Qwen Code reads project settings from .qwen/ in the directory it is
// started in only, git repository or not (checked with 0.24.4): started
// in a subdirectory it runs none of the workspace's hooks.
func init() {
	registerSpec(&spec{
		name:    "qwen",
		title:   "Qwen Code",
		decode:  decodeQwen,
		reply:   func(string, *Failure) string { return "{}\n" },
		install: installQwen,
		user:    qwenUser,
		markers: Markers{
			Workspace: []string{".qwen", "QWEN.md"},
			Bins:      []string{"qwen"},
			Home:      []string{".qwen"},
			Writes:    ".qwen/settings.json",
			Config:    []string{".qwen/settings.json"},
			Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check","submitted_prompt":"ckpt install --check"}`,
			Subdir:    "never",
		},
	})
}

// qwenMatcher is the PreToolUse matcher ckpt installs: Qwen Code's tools
// that write files, and its shell.
const qwenMatcher = "write_file|edit|notebook_edit|run_shell_command"

func decodeQwen(data []byte) (Plan, *Failure) {
	var ev struct {
		claudeStyleEvent
		Submitted *string `json:"submitted_prompt"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	switch ev.HookEventName {
	case "UserPromptSubmit":
		switch {
		case ev.Submitted != nil && *ev.Submitted != "":
			ev.Prompt = ev.Submitted
		case ev.Prompt == nil:
			return Plan{}, &Failure{Msg: "UserPromptSubmit event has no prompt; nothing recorded"}
		case *ev.Prompt == "":
			// A model request that sends tool results: the same turn.
			return Plan{None: true}, nil
		}
	case "PreToolUse":
		if ev.ToolName == "notebook_edit" {
			args := objectArgs(ev.ToolInput)
			n := normEvent{kind: "tool", session: ev.SessionID, cwd: ev.Cwd, tool: ev.ToolName}
			if p := firstString(args, "notebook_path", "file_path"); p != "" {
				n.paths = []string{p}
			}
			return n.plan("qwen")
		}
	}
	return planClaudeStyle("qwen", ev.claudeStyleEvent, nil, func() (Plan, *Failure) {
		switch ev.HookEventName {
		case "SessionStart", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "UserPromptExpansion",
			"SessionDelete", "MessageDisplay", "StopFailure", "SubagentStart", "SubagentStop", "PreCompact",
			"PostCompact", "Notification", "PermissionRequest", "PermissionDenied", "TodoCreated",
			"TodoCompleted", "InstructionsLoaded":
			return Plan{None: true}, nil
		}
		return Plan{}, unknownEvent(ev.HookEventName)
	})
}

func installQwen(e *Env, install bool) error {
	ws := e.Workspace
	path := filepath.Join(ws, ".qwen", "settings.json")
	if e.User {
		p, err := qwenUser()
		if err != nil {
			return err
		}
		path = p
	}
	err := installGroups(e, path, []groupWant{{"UserPromptSubmit", ""}, {"PreToolUse", qwenMatcher}, {"Stop", ""}, {"SessionEnd", ""}}, e.agentCommand("qwen"), ownAgentCommand("qwen"), install)
	if err == nil && install && !e.User {
		// Folder trust is off in Qwen Code unless the user turns it on
		// (security.folderTrust.enabled); then a project's settings load
		// only in a trusted folder.
		e.say("ckpt: note: with folder trust on, Qwen Code runs a project's hooks only in a trusted folder (trust it when qwen asks, or use `ckpt install qwen --user`)")
	}
	return err
}

// qwenUser is the file a --user install writes.
func qwenUser() (string, error) { return userPath(".qwen", "settings.json") }

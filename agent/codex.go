package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// OpenAI Codex CLI: Claude-style hooks in .codex/hooks.json
// (~/.codex/hooks.json, or $CODEX_HOME/hooks.json, with --user). Its
// PreToolUse names the patch tool apply_patch, with the whole patch in
// tool_input.command, and its shell Bash. Stop (the turn ended) starts a
// background sync when the store has a remote.
func init() {
	registerSpec(&spec{
		name:    "codex",
		title:   "OpenAI Codex CLI",
		decode:  decodeClaudeStyle("codex"),
		install: installCodex,
		user:    codexUser,
		markers: Markers{
			Workspace: []string{".codex", "AGENTS.md"},
			Bins:      []string{"codex"},
			Home:      []string{".codex"},
			Writes:    ".codex/hooks.json",
			Config:    []string{".codex/hooks.json"},
			Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","turn_id":"t1","prompt":"ckpt install --check"}`,
			Subdir:    "git",
		},
	})
}

// claudeStyleEvent is the JSON Codex CLI (and Copilot CLI's PascalCase
// events) send: Claude Code's field names.
type claudeStyleEvent struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	Prompt        *string         `json:"prompt"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
}

// decodeClaudeStyle decodes Claude-shaped events of agent.
func decodeClaudeStyle(agent string) func([]byte) (Plan, *Failure) {
	return func(data []byte) (Plan, *Failure) {
		var ev claudeStyleEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return Plan{}, badJSON(err)
		}
		return planClaudeStyle(agent, ev, nil, func() (Plan, *Failure) {
			switch ev.HookEventName {
			case "SessionStart", "PostToolUse", "SubagentStop", "Notification", "PreCompact", "PostCompact",
				"PermissionRequest", "PostToolUseFailure", "ErrorOccurred":
				return Plan{None: true}, nil
			}
			return Plan{}, unknownEvent(ev.HookEventName)
		})
	}
}

// planClaudeStyle plans the events every Claude-shaped dialect sends alike
// (a prompt, a tool call, Stop and SessionEnd); fix, when set, rewrites
// each path a tool call names, and other plans any other event.
func planClaudeStyle(agent string, ev claudeStyleEvent, fix func(string) string, other func() (Plan, *Failure)) (Plan, *Failure) {
	n := normEvent{session: ev.SessionID, cwd: ev.Cwd, tool: ev.ToolName}
	switch ev.HookEventName {
	case "UserPromptSubmit":
		if ev.Prompt == nil {
			return Plan{}, &Failure{Msg: "UserPromptSubmit event has no prompt; nothing recorded"}
		}
		n.kind, n.prompt = "prompt", *ev.Prompt
	case "PreToolUse":
		n.kind = "tool"
		n.paths, n.shell = toolWrites(ev.ToolName, objectArgs(ev.ToolInput))
		if fix != nil {
			for i, p := range n.paths {
				n.paths[i] = fix(p)
			}
		}
	case "Stop", "SessionEnd":
		return syncPlan()
	default:
		return other()
	}
	return n.plan(agent)
}

// toolWrites says what a tool call named tool with arguments args is about
// to write, for the tool names of every supported agent: the paths of a
// file tool, the paths a patch names, or a shell command.
func toolWrites(tool string, args map[string]json.RawMessage) (paths []string, shell bool) {
	switch tool {
	case "Bash", "PowerShell", "Shell", "shell", "bash", "powershell", "run_shell_command",
		"exec_command", "local_shell", "execute_command", "run_commands", "run_command":
		return shellPatchPaths(firstString(args, "command", "cmd")), true
	case "apply_patch", "patch", "ApplyPatch":
		return patchPaths(firstString(args, "command", "input", "patch", "patchText", "patch_text")), false
	}
	// A file tool: whichever path argument it has.
	if p := firstString(args, "file_path", "filePath", "path", "target_file", "notebook_path", "absolute_path"); p != "" && writingTool(tool) {
		return []string{p}, false
	}
	// An edit tool over several files (Cursor's, Copilot's multi-edits).
	return nil, false
}

// writingTool says whether tool writes the file its path argument names
// (and is not a read, a search or a listing).
func writingTool(tool string) bool {
	switch tool {
	case "Write", "Edit", "MultiEdit", "NotebookEdit", "StrReplace", "Delete", "TabWrite",
		"write_file", "replace", "edit_file", "create", "edit", "str_replace", "insert", "write",
		"multiedit", "write_to_file", "replace_in_file", "str_replace_editor", "delete_file", "create_file":
		return true
	}
	return false
}

func installCodex(e *Env, install bool) error {
	ws := e.Workspace
	path := filepath.Join(ws, ".codex", "hooks.json")
	if e.User {
		p, err := codexUser()
		if err != nil {
			return err
		}
		path = p
	}
	err := installGroups(e, path, []groupWant{{"UserPromptSubmit", ""}, {"PreToolUse", ""}, {"Stop", ""}}, e.agentCommand("codex"), ownAgentCommand("codex"), install)
	if err == nil && install {
		e.say("ckpt: note: %s", codexTrustNote(e.User))
	}
	return err
}

// codexHome is $CODEX_HOME, where Codex keeps its user configuration.
func codexHome() string { return os.Getenv("CODEX_HOME") }

// codexTrustNote says what Codex needs before it runs the hooks ckpt
// installed (checked with the Codex CLI 0.169.0): a new or changed hook
// runs only once the user trusts it, and a project's .codex/ layer loads
// only in a trusted project. ckpt writes neither: both are the user's
// decision, and the hook's trust hash is Codex's own.
func codexTrustNote(user bool) string {
	note := "Codex runs a new or changed hook only after you trust it: open /hooks in codex and trust ckpt's three hooks"
	if !user {
		note += "; it loads .codex/hooks.json only in a project you trusted"
	}
	return note + " (automation that vets its hooks: codex exec --dangerously-bypass-hook-trust)"
}

// codexUser is the file a --user install writes: hooks.json in
// $CODEX_HOME, else in ~/.codex.
func codexUser() (string, error) {
	home := codexHome()
	if home == "" {
		p, err := userPath(".codex")
		if err != nil {
			return "", err
		}
		home = p
	}
	return filepath.Join(home, "hooks.json"), nil
}

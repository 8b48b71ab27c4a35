package agent

import (
	"encoding/json"
	"path/filepath"
)

// Cursor: .cursor/hooks.json (~/.cursor/hooks.json with --user), version
// 1, flat entries per event. beforeSubmitPrompt carries the prompt,
// preToolUse the agent's tool calls (tool_name, tool_input), and
// beforeShellExecution each shell command; stop (the agent loop ended) and
// sessionEnd start a background sync when the store has a remote, and
// answer {} (no followup_message: the agent stays stopped). Events name
// the conversation
// (conversation_id) and the workspace (workspace_roots).
func init() {
	registerSpec(&spec{
		name:   "cursor",
		title:  "Cursor",
		decode: decodeCursor,
		reply: func(event string, _ *Failure) string {
			if event == "beforeSubmitPrompt" {
				return `{"continue": true}` + "\n"
			}
			// No permission field: ckpt neither allows nor denies, so
			// Cursor asks or runs exactly as it would without ckpt.
			return "{}\n"
		},
		install: installCursor,
		user:    cursorUser,
		markers: Markers{
			Workspace: []string{".cursor", ".cursorrules"},
			Bins:      []string{"cursor-agent", "cursor"},
			Home:      []string{".cursor"},
			Writes:    ".cursor/hooks.json",
			Config:    []string{".cursor/hooks.json"},
			Probe:     `{"conversation_id":"ckpt-check","generation_id":"g1","workspace_roots":["@WORK@"],"hook_event_name":"beforeSubmitPrompt","prompt":"ckpt install --check"}`,
		},
	})
}

type cursorEvent struct {
	HookEventName  string          `json:"hook_event_name"`
	ConversationID string          `json:"conversation_id"`
	WorkspaceRoots []string        `json:"workspace_roots"`
	Prompt         *string         `json:"prompt"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	Command        string          `json:"command"`
	Cwd            string          `json:"cwd"`
}

func decodeCursor(data []byte) (Plan, *Failure) {
	var ev cursorEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	n := normEvent{session: ev.ConversationID, tool: ev.ToolName}
	if len(ev.WorkspaceRoots) > 0 {
		n.cwd = ev.WorkspaceRoots[0]
	} else {
		n.cwd = ev.Cwd
	}
	switch ev.HookEventName {
	case "beforeSubmitPrompt":
		if ev.Prompt == nil {
			return Plan{}, &Failure{Msg: "beforeSubmitPrompt event has no prompt; nothing recorded"}
		}
		n.kind, n.prompt = "prompt", *ev.Prompt
	case "preToolUse":
		n.kind = "tool"
		n.paths, n.shell = toolWrites(ev.ToolName, objectArgs(ev.ToolInput))
	case "beforeShellExecution":
		n.kind, n.tool, n.shell = "tool", "shell", true
	case "stop", "sessionEnd":
		return syncPlan()
	case "sessionStart", "postToolUse", "postToolUseFailure", "afterShellExecution",
		"beforeMCPExecution", "afterMCPExecution", "beforeReadFile", "afterFileEdit", "afterAgentResponse",
		"afterAgentThought", "subagentStart", "subagentStop", "preCompact":
		return Plan{None: true}, nil
	default:
		return Plan{}, unknownEvent(ev.HookEventName)
	}
	return n.plan("cursor")
}

func installCursor(e *Env, install bool) error {
	ws := e.Workspace
	path := filepath.Join(ws, ".cursor", "hooks.json")
	if e.User {
		p, err := cursorUser()
		if err != nil {
			return err
		}
		path = p
	}
	entry := func(cmd string) any {
		return struct {
			Command string `json:"command"`
		}{cmd}
	}
	return installFlat(e, path, []string{"beforeSubmitPrompt", "preToolUse", "beforeShellExecution", "stop", "sessionEnd"},
		e.agentCommand("cursor"), "command", entry, map[string]string{"version": "1"}, ownAgentCommand("cursor"), install)
}

// cursorUser is the file a --user install writes.
func cursorUser() (string, error) { return userPath(".cursor", "hooks.json") }

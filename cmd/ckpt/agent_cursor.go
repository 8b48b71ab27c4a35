package main

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
	registerAgent(&agentSpec{
		name:   "cursor",
		title:  "Cursor",
		decode: decodeCursor,
		reply: func(event string, _ *hookFailure) string {
			if event == "beforeSubmitPrompt" {
				return `{"continue": true}` + "\n"
			}
			// No permission field: ckpt neither allows nor denies, so
			// Cursor asks or runs exactly as it would without ckpt.
			return "{}\n"
		},
		install: installCursor,
		detect:  []string{".cursor", ".cursorrules"},
		writes:  ".cursor/hooks.json",
		bins:    []string{"cursor-agent", "cursor"},
		home:    []string{".cursor"},
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

func decodeCursor(data []byte) (hookPlan, *hookFailure) {
	var ev cursorEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return hookPlan{}, badJSON(err)
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
			return hookPlan{}, &hookFailure{msg: "beforeSubmitPrompt event has no prompt; nothing recorded"}
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
		return hookPlan{none: true}, nil
	default:
		return hookPlan{}, unknownEvent(ev.HookEventName)
	}
	return n.plan("cursor")
}

func installCursor(a *app, ws string, o installOptions, install bool) error {
	path := filepath.Join(ws, ".cursor", "hooks.json")
	if o.user {
		p, err := userPath(".cursor", "hooks.json")
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
	return installFlat(a, path, []string{"beforeSubmitPrompt", "preToolUse", "beforeShellExecution", "stop", "sessionEnd"},
		agentCommand("cursor", o.strict), "command", entry, map[string]string{"version": "1"}, ownAgentCommand("cursor"), install)
}

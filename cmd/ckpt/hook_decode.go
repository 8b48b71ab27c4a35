package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt/ckpt/controller"
)

// hookEvent is one agent hook event: Claude Code's JSON, which is also the
// generic protocol documented in the README ("Agent hooks").
type hookEvent struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	Prompt         *string         `json:"prompt"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	Source         string          `json:"source"`
}

// toolPaths is the part of tool_input the hook reads.
type toolPaths struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
}

// quietEvents are Claude Code events the hook accepts and has nothing to
// do for: they are not installed, but a hand-written settings file may
// route them here, and that is not a mistake worth a message.
var quietEvents = map[string]bool{
	"SessionStart": true, "PostToolUse": true, "Stop": true, "SubagentStop": true, "Notification": true,
	"PreCompact": true, "SessionEnd": true,
}

// hookPlan is what one event asks for, decided from its JSON alone.
type hookPlan struct {
	ev    hookEvent
	paths []string // to capture: absolute, or relative to ev.Cwd
	shell bool     // a shell command is about to run
	none  bool     // nothing to do (a quiet event, a tool that does not write)
}

// decodeHook parses one event of agent ("claude" or "generic") and decides
// what it asks for, before any store is opened. It touches nothing.
func decodeHook(data []byte, agent string) (hookPlan, *hookFailure) {
	var ev hookEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("event is not valid JSON (%v); nothing recorded", err)}
	}
	if ev.HookEventName == "" {
		return hookPlan{}, &hookFailure{msg: "event has no hook_event_name; nothing recorded"}
	}
	switch ev.HookEventName {
	case "UserPromptSubmit", "PreToolUse":
	default:
		if quietEvents[ev.HookEventName] {
			return hookPlan{none: true}, nil
		}
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("unknown event %q; nothing recorded", ev.HookEventName)}
	}
	if ev.SessionID == "" || ev.Cwd == "" {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("%s event needs session_id and cwd; nothing recorded", ev.HookEventName)}
	}
	if !controller.ValidSession(ev.SessionID) {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("session_id %q: %v; nothing recorded", ev.SessionID, controller.ErrBadSession)}
	}
	if !filepath.IsAbs(ev.Cwd) {
		return hookPlan{}, &hookFailure{msg: fmt.Sprintf("cwd %q is not absolute; nothing recorded", ev.Cwd)}
	}

	var paths []string
	shell := false
	if ev.HookEventName == "PreToolUse" {
		var tp toolPaths
		switch {
		case agent == "claude" && (ev.ToolName == "Write" || ev.ToolName == "Edit" || ev.ToolName == "MultiEdit"):
			if err := json.Unmarshal(ev.ToolInput, &tp); err != nil || tp.FilePath == "" {
				return hookPlan{}, &hookFailure{msg: fmt.Sprintf("%s event has no tool_input.file_path; nothing recorded", ev.ToolName)}
			}
			paths = append(paths, tp.FilePath)
		case agent == "claude" && ev.ToolName == "NotebookEdit":
			if err := json.Unmarshal(ev.ToolInput, &tp); err != nil || tp.NotebookPath == "" {
				return hookPlan{}, &hookFailure{msg: "NotebookEdit event has no tool_input.notebook_path; nothing recorded"}
			}
			paths = append(paths, tp.NotebookPath)
		case ev.ToolName == "Bash" || (agent == "generic" && ev.ToolName == "shell"):
			shell = true
		case agent == "generic":
			if len(ev.ToolInput) > 0 && json.Unmarshal(ev.ToolInput, &tp) == nil {
				for _, p := range []string{tp.FilePath, tp.NotebookPath} {
					if p != "" {
						paths = append(paths, p)
					}
				}
			}
		}
		if len(paths) == 0 && !shell {
			return hookPlan{none: true}, nil // a tool that does not write (Read, Grep, …)
		}
	}
	if ev.HookEventName == "UserPromptSubmit" && ev.Prompt == nil {
		return hookPlan{}, &hookFailure{msg: "UserPromptSubmit event has no prompt; nothing recorded"}
	}

	return hookPlan{ev: ev, paths: paths, shell: shell}, nil
}

// claudeWorkspace is the workspace for a Claude Code event: the project
// directory Claude Code exports to hooks when cwd is inside it (the agent's
// shell may have cd'd into a subdirectory, and a session has one
// workspace), else cwd.
func claudeWorkspace(cwd string) string {
	proj := os.Getenv("CLAUDE_PROJECT_DIR")
	if proj == "" || !filepath.IsAbs(proj) {
		return cwd
	}
	if rel, err := filepath.Rel(proj, cwd); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return proj
	}
	return cwd
}

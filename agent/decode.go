package agent

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ckpt/ckpt/controller"
)

// Event is one agent hook event: Claude Code's JSON, which is also the
// generic protocol documented in docs/agents/README.md.
type Event struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	Prompt         *string         `json:"prompt"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	Source         string          `json:"source"`
	PromptID       string          `json:"prompt_id"`
	// AgentID and AgentType are set on events from inside a subagent; its
	// session_id is the parent's, so its edits land in the parent's open
	// turn.
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
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
	"PostToolUse": true, "Stop": true, "SubagentStop": true, "Notification": true,
	"PreCompact": true, "SessionEnd": true,
}

// syncEvents end an agent's answer or session: the moment to upload what
// was recorded, in the background, when the store has a remote.
var syncEvents = map[string]bool{"Stop": true, "SessionEnd": true}

// onWindows selects the path style agentPath converts to.
var onWindows = runtime.GOOS == "windows"

// decodeHook parses one event of agent ("claude" or "generic") and decides
// what it asks for, before any store is opened. It touches nothing.
func decodeHook(data []byte, agent string) (Plan, *Failure) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, &Failure{Msg: fmt.Sprintf("event is not valid JSON (%v); nothing recorded", err)}
	}
	if ev.HookEventName == "" {
		return Plan{}, &Failure{Msg: "event has no hook_event_name; nothing recorded"}
	}
	switch ev.HookEventName {
	case "UserPromptSubmit", "PreToolUse", "SessionStart":
	default:
		if quietEvents[ev.HookEventName] {
			// ev only says where the event came from (its cwd, when
			// absolute): the hook server refuses one from outside the
			// token's install before it does anything.
			cwd, abs := agentPath(ev.Cwd, onWindows)
			if !abs {
				cwd = ""
			}
			return Plan{Event: Event{Cwd: cwd}, None: true, Sync: syncEvents[ev.HookEventName]}, nil
		}
		return Plan{}, &Failure{Msg: fmt.Sprintf("unknown event %q; nothing recorded", ev.HookEventName)}
	}
	if ev.SessionID == "" || ev.Cwd == "" {
		return Plan{}, &Failure{Msg: fmt.Sprintf("%s event needs session_id and cwd; nothing recorded", ev.HookEventName)}
	}
	if !controller.ValidSession(ev.SessionID) {
		return Plan{}, &Failure{Msg: fmt.Sprintf("session_id %q: %v; nothing recorded", ev.SessionID, controller.ErrBadSession)}
	}
	cwd, abs := agentPath(ev.Cwd, onWindows)
	if !abs {
		return Plan{}, &Failure{Msg: fmt.Sprintf("cwd %q is not absolute; nothing recorded", ev.Cwd)}
	}
	ev.Cwd = cwd
	if ev.HookEventName == "SessionStart" {
		switch ev.Source {
		case "startup", "resume", "fork", "":
			return Plan{Event: ev, Start: true}, nil
		default: // clear, compact: the conversation goes on in the same turn
			return Plan{Event: ev, None: true}, nil
		}
	}

	var paths []string
	shell := false
	if ev.HookEventName == "PreToolUse" {
		var f *Failure
		if paths, shell, f = toolInputPaths(ev, agent); f != nil {
			return Plan{}, f
		}
		if len(paths) == 0 && !shell {
			return Plan{Event: ev, None: true}, nil // a tool that does not write (Read, Grep, …)
		}
		for i, p := range paths {
			paths[i], _ = agentPath(p, onWindows)
		}
	}
	if ev.HookEventName == "UserPromptSubmit" && ev.Prompt == nil {
		return Plan{}, &Failure{Msg: "UserPromptSubmit event has no prompt; nothing recorded"}
	}
	if agent == "claude" && ev.HookEventName == "UserPromptSubmit" && notAPrompt(*ev.Prompt) {
		return Plan{Event: ev, None: true}, nil
	}

	return Plan{Event: ev, Paths: paths, Shell: shell}, nil
}

// toolInputPaths reads what a PreToolUse event of agent ("claude" or
// "generic") writes: the paths in its tool_input, and whether it runs a
// shell command.
func toolInputPaths(ev Event, agent string) (paths []string, shell bool, f *Failure) {
	var tp toolPaths
	switch {
	case agent == "claude" && (ev.ToolName == "Write" || ev.ToolName == "Edit" || ev.ToolName == "MultiEdit"):
		if err := json.Unmarshal(ev.ToolInput, &tp); err != nil || tp.FilePath == "" {
			return nil, false, &Failure{Msg: fmt.Sprintf("%s event has no tool_input.file_path; nothing recorded", ev.ToolName)}
		}
		paths = append(paths, tp.FilePath)
	case agent == "claude" && ev.ToolName == "NotebookEdit":
		if err := json.Unmarshal(ev.ToolInput, &tp); err != nil || tp.NotebookPath == "" {
			return nil, false, &Failure{Msg: "NotebookEdit event has no tool_input.notebook_path; nothing recorded"}
		}
		paths = append(paths, tp.NotebookPath)
	case ev.ToolName == "Bash" || ev.ToolName == "PowerShell" || (agent == "generic" && ev.ToolName == "shell"):
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
	return paths, shell, nil
}

// notAPrompt reports whether a Claude Code UserPromptSubmit "prompt" is
// not one the user typed: the <task-notification> Claude Code sends itself
// when a background subagent finishes (2.1.332). It opens no turn (the
// work it leads to goes on in the open one), so a rewind never offers to
// resend it.
func notAPrompt(prompt string) bool {
	return strings.HasPrefix(strings.TrimLeft(prompt, " \t\r\n"), "<task-notification>")
}

// agentPath converts a path from an agent's event into the host's form
// (windows selects Windows style) and says whether it is absolute there.
// Claude Code on Windows sends backslash paths (C:\p\x.go), and its Git
// Bash side may give forward slashes (C:/p/x.go) or the MSYS form
// (/c/p/x.go): all three become C:\p\x.go. On other systems the path is
// taken as it is (a backslash is an ordinary character in a name there).
func agentPath(p string, windows bool) (string, bool) {
	if !windows {
		return p, strings.HasPrefix(p, "/")
	}
	p = strings.ReplaceAll(p, "/", `\`)
	if len(p) >= 2 && p[0] == '\\' && isLetter(p[1]) && (len(p) == 2 || p[2] == '\\') {
		p = strings.ToUpper(p[1:2]) + ":" + p[2:]
		if len(p) == 2 {
			p += `\`
		}
	}
	abs := strings.HasPrefix(p, `\\`) || (len(p) >= 3 && isLetter(p[0]) && p[1] == ':' && p[2] == '\\')
	return p, abs
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// claudeWorkspace is the workspace for a Claude Code event: the project
// directory Claude Code exports to hooks (proj, its $CLAUDE_PROJECT_DIR)
// when cwd is inside it (the agent's shell may have cd'd into a
// subdirectory, and a session has one workspace), else cwd.
func claudeWorkspace(cwd, proj string) string {
	if proj == "" || !filepath.IsAbs(proj) {
		return cwd
	}
	if rel, err := filepath.Rel(proj, cwd); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return proj
	}
	return cwd
}

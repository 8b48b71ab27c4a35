package agent

import (
	"encoding/json"
	"path/filepath"
)

// Gemini CLI: hooks in .gemini/settings.json (~/.gemini/settings.json
// with --user), Claude-style matcher groups. BeforeAgent carries the
// user's prompt; BeforeTool the tool call (write_file and replace with
// tool_input.file_path, run_shell_command); AfterAgent (the answer is
// done) and SessionEnd start a background sync when the store has a
// remote. Every hook answers JSON on stdout: {} lets the CLI go on (for
// AfterAgent: accepts the answer, no retry).
func init() {
	registerSpec(&spec{
		name:    "gemini",
		title:   "Gemini CLI",
		decode:  decodeGemini,
		reply:   func(string, *Failure) string { return "{}\n" },
		install: installGemini,
		user:    geminiUser,
		markers: Markers{
			Workspace: []string{".gemini", "GEMINI.md"},
			Bins:      []string{"gemini"},
			Home:      []string{".gemini"},
			Writes:    ".gemini/settings.json",
			Config:    []string{".gemini/settings.json"},
			Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"BeforeAgent","prompt":"ckpt install --check"}`,
			Subdir:    "never",
		},
	})
}

// geminiMatcher is the BeforeTool matcher ckpt installs: the built-in
// tools that write files, and the shell.
const geminiMatcher = "write_file|replace|run_shell_command"

func decodeGemini(data []byte) (Plan, *Failure) {
	var ev claudeStyleEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	n := normEvent{session: ev.SessionID, cwd: ev.Cwd, tool: ev.ToolName}
	switch ev.HookEventName {
	case "BeforeAgent":
		if ev.Prompt == nil {
			return Plan{}, &Failure{Msg: "BeforeAgent event has no prompt; nothing recorded"}
		}
		n.kind, n.prompt = "prompt", *ev.Prompt
	case "BeforeTool":
		n.kind = "tool"
		n.paths, n.shell = toolWrites(ev.ToolName, objectArgs(ev.ToolInput))
	case "AfterAgent", "SessionEnd":
		return syncPlan()
	case "SessionStart", "BeforeModel", "AfterModel", "BeforeToolSelection",
		"AfterTool", "PreCompress", "Notification":
		return Plan{None: true}, nil
	default:
		return Plan{}, unknownEvent(ev.HookEventName)
	}
	return n.plan("gemini")
}

func installGemini(e *Env, install bool) error {
	ws := e.Workspace
	path := filepath.Join(ws, ".gemini", "settings.json")
	if e.User {
		p, err := geminiUser()
		if err != nil {
			return err
		}
		path = p
	}
	err := installGroups(e, path, []groupWant{{"BeforeAgent", ""}, {"BeforeTool", geminiMatcher}, {"AfterAgent", ""}, {"SessionEnd", ""}}, e.agentCommand("gemini"), ownAgentCommand("gemini"), install)
	if err == nil && install && !e.User {
		// Checked with the Gemini CLI 0.61.0: in an untrusted folder the
		// project's settings, hooks and all, are not loaded, and
		// `gemini -p --skip-trust` does not load them either.
		e.say("ckpt: note: Gemini CLI runs a project's hooks only in a trusted folder (trust it when gemini asks; for headless runs set GEMINI_CLI_TRUST_WORKSPACE=true, as --skip-trust does not load them)")
	}
	return err
}

// geminiUser is the file a --user install writes.
func geminiUser() (string, error) { return userPath(".gemini", "settings.json") }

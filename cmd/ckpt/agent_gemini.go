package main

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
	registerAgent(&agentSpec{
		name:    "gemini",
		title:   "Gemini CLI",
		decode:  decodeGemini,
		reply:   func(string, *hookFailure) string { return "{}\n" },
		install: installGemini,
		detect:  []string{".gemini", "GEMINI.md"},
		writes:  ".gemini/settings.json",
		bins:    []string{"gemini"},
		home:    []string{".gemini"},
	})
}

// geminiMatcher is the BeforeTool matcher ckpt installs: the built-in
// tools that write files, and the shell.
const geminiMatcher = "write_file|replace|run_shell_command"

func decodeGemini(data []byte) (hookPlan, *hookFailure) {
	var ev claudeStyleEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return hookPlan{}, badJSON(err)
	}
	n := normEvent{session: ev.SessionID, cwd: ev.Cwd, tool: ev.ToolName}
	switch ev.HookEventName {
	case "BeforeAgent":
		if ev.Prompt == nil {
			return hookPlan{}, &hookFailure{msg: "BeforeAgent event has no prompt; nothing recorded"}
		}
		n.kind, n.prompt = "prompt", *ev.Prompt
	case "BeforeTool":
		n.kind = "tool"
		n.paths, n.shell = toolWrites(ev.ToolName, objectArgs(ev.ToolInput))
	case "AfterAgent", "SessionEnd":
		return syncPlan()
	case "SessionStart", "BeforeModel", "AfterModel", "BeforeToolSelection",
		"AfterTool", "PreCompress", "Notification":
		return hookPlan{none: true}, nil
	default:
		return hookPlan{}, unknownEvent(ev.HookEventName)
	}
	return n.plan("gemini")
}

func installGemini(a *app, ws string, o installOptions, install bool) error {
	path := filepath.Join(ws, ".gemini", "settings.json")
	if o.user {
		p, err := userPath(".gemini", "settings.json")
		if err != nil {
			return err
		}
		path = p
	}
	err := installGroups(a, path, []groupWant{{"BeforeAgent", ""}, {"BeforeTool", geminiMatcher}, {"AfterAgent", ""}, {"SessionEnd", ""}}, agentCommand("gemini", o.strict), ownAgentCommand("gemini"), install)
	if err == nil && install && !o.user {
		// Checked with the Gemini CLI 0.61.0: in an untrusted folder the
		// project's settings, hooks and all, are not loaded, and
		// `gemini -p --skip-trust` does not load them either.
		a.say("ckpt: note: Gemini CLI runs a project's hooks only in a trusted folder (trust it when gemini asks; for headless runs set GEMINI_CLI_TRUST_WORKSPACE=true, as --skip-trust does not load them)")
	}
	return err
}

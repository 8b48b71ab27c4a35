package agent

import (
	"encoding/json"
)

// Amp: a plugin file, .amp/plugins/ckpt.ts (~/.config/amp/plugins/ckpt.ts
// with --user), which Amp runs under Bun with its plugin API. Its
// agent.start handler hands each prompt, its tool.call handler each tool
// call and its agent.end handler each finished answer to `ckpt hook amp`
// as Claude-shaped JSON (the generic protocol), the thread id as the
// session. For a tool call the plugin adds what Amp's own helpers say the
// call does: "paths", the files it modifies (filesModifiedByToolCall:
// edits, creations, apply_patch, sed -i), and "shell", whether it is a
// shell command (shellCommandFromToolCall), so ckpt need not know Amp's
// tool names. A tool.call handler answers {action: "allow"}, or with
// --strict and a failed capture "reject-and-continue", which stops the
// tool.
func init() {
	registerSpec(&spec{
		name:    "amp",
		title:   "Amp",
		decode:  decodeAmp,
		install: installAmp,
		user:    ampUser,
		markers: Markers{
			Workspace: []string{".amp", "AGENT.md"},
			Bins:      []string{"amp"},
			Home:      []string{".config/amp"},
			Writes:    ".amp/plugins/ckpt.ts",
			Config:    []string{".amp/plugins/ckpt.ts"},
			Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`,
		},
	})
}

// ampPlugin is the plugin ckpt installs; CKPT_COMMAND becomes the hook
// command as a JSON array of argv. It is plain JavaScript, which Amp's
// TypeScript loader takes as it is.
const ampPlugin = `// ` + ownFileMark + ` (ckpt uninstall amp removes it).
// Hands Amp's prompts and tool calls to ckpt before they act.
import { spawnSync } from "node:child_process";

const argv = CKPT_COMMAND;

export const description = "ckpt: records each prompt and saves files before a tool changes them, for ckpt rewind";

export default function (amp) {
  // The workspace Amp has open; without one, the directory Amp was started
  // in (a plugin's own working directory is its plugin directory).
  const root = amp.system.workspaceRoot ? amp.helpers.filePathFromURI(amp.system.workspaceRoot) : process.env.PWD || process.cwd();
  const send = (event) => {
    const r = spawnSync(argv[0], argv.slice(1), { input: JSON.stringify(event), encoding: "utf8", cwd: root });
    // ckpt not found or not runnable: say so, and let the tool run.
    if (r.error) amp.logger.log("ckpt: amp plugin: " + r.error.message);
    if (r.stderr) amp.logger.log(r.stderr);
    return r;
  };
  amp.on("agent.start", async (event) => {
    send({ hook_event_name: "UserPromptSubmit", session_id: event.thread.id, cwd: root, prompt: event.message });
    return {};
  });
  amp.on("tool.call", async (event) => {
    // Without Amp's answer (a helper that throws), ckpt goes by the tool's
    // name and arguments.
    let paths, shell;
    try {
      paths = (amp.helpers.filesModifiedByToolCall(event) || []).map((u) => amp.helpers.filePathFromURI(u));
      shell = amp.helpers.shellCommandFromToolCall(event) != null;
    } catch (e) {
      amp.logger.log("ckpt: amp plugin: " + e);
      paths = shell = undefined;
    }
    const r = send({ hook_event_name: "PreToolUse", session_id: event.thread.id, cwd: root, tool_name: event.tool,
      tool_input: event.input, paths, shell });
    // Exit 2 only with --strict: a capture failed, so the tool must not run.
    if (r.status === 2) return { action: "reject-and-continue", message: r.stderr || "ckpt: capture failed" };
    return { action: "allow" };
  });
  // The answer is done: ckpt starts a background sync when the store has
  // a remote (the hook returns at once).
  amp.on("agent.end", async (event) => {
    send({ hook_event_name: "Stop", session_id: event.thread.id, cwd: root });
  });
}
`

func decodeAmp(data []byte) (Plan, *Failure) {
	var ev struct {
		claudeStyleEvent
		Paths *[]string `json:"paths"`
		Shell bool      `json:"shell"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	if ev.HookEventName == "PreToolUse" && ev.Paths != nil {
		// The plugin said what the call modifies.
		n := normEvent{kind: "tool", session: ev.SessionID, cwd: ev.Cwd, tool: ev.ToolName, paths: *ev.Paths, shell: ev.Shell}
		return n.plan("amp")
	}
	return planClaudeStyle("amp", ev.claudeStyleEvent, nil, func() (Plan, *Failure) {
		return Plan{}, unknownEvent(ev.HookEventName)
	})
}

func installAmp(e *Env, install bool) error {
	return installPlugin(e, install, "amp", []string{".amp", "plugins"}, ampUser, "ckpt.ts", ampPlugin)
}

// ampUser is the plugin a --user install writes.
func ampUser() (string, error) { return userPath(".config", "amp", "plugins", "ckpt.ts") }

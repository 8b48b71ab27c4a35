package agent

import (
	"path/filepath"
	"strings"
)

// OpenCode: a plugin file, .opencode/plugin/ckpt.js
// (~/.config/opencode/plugin/ckpt.js with --user). Its chat.message hook
// hands each user message, and its tool.execute.before hook each tool
// call, and its session.idle event as a Stop (a background sync when the
// store has a remote), to `ckpt hook opencode` as Claude-shaped JSON (the generic
// protocol), with OpenCode's own tool names and arguments (write and edit
// with filePath, patch/apply_patch with patchText, bash) left as they
// are: the hook knows them, so the plugin stays a pipe.
func init() {
	registerSpec(&spec{
		name:    "opencode",
		title:   "OpenCode",
		decode:  decodeClaudeStyle("opencode"),
		install: installOpenCode,
		user:    opencodeUser,
		markers: Markers{
			Workspace: []string{".opencode", "opencode.json", "opencode.jsonc"},
			Bins:      []string{"opencode"},
			Home:      []string{".config/opencode"},
			Writes:    ".opencode/plugin/ckpt.js",
			Config:    []string{".opencode/plugin/ckpt.js"},
			Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`,
		},
	})
}

// openCodePlugin is the plugin ckpt installs; CKPT_COMMAND becomes the
// hook command as a JSON array of argv.
const openCodePlugin = `// ` + ownFileMark + ` (ckpt uninstall opencode removes it).
// Hands OpenCode's user messages and tool calls to ckpt before they act.
import { spawnSync } from "node:child_process";

const argv = CKPT_COMMAND;

export const CkptPlugin = async ({ directory }) => {
  const send = (event) => {
    const r = spawnSync(argv[0], argv.slice(1), { input: JSON.stringify(event), encoding: "utf8", cwd: directory });
    // ckpt not found or not runnable: say so, and let the tool run.
    if (r.error) process.stderr.write("ckpt: opencode plugin: " + r.error.message + "\n");
    if (r.stderr) process.stderr.write(r.stderr);
    // Exit 2 only with --strict: a capture failed, so the tool must not run.
    if (r.status === 2) throw new Error(r.stderr || "ckpt: capture failed");
  };
  return {
    "chat.message": async (input, output) => {
      const text = (output.parts || []).filter((p) => p.type === "text" && !p.synthetic).map((p) => p.text).join("\n");
      if (!text) return;
      send({ hook_event_name: "UserPromptSubmit", session_id: input.sessionID, cwd: directory, prompt: text });
    },
    "tool.execute.before": async (input, output) => {
      send({ hook_event_name: "PreToolUse", session_id: input.sessionID, cwd: directory, tool_name: input.tool, tool_input: output.args || {} });
    },
    // The session finished answering: ckpt starts a background sync when
    // the store has a remote (the hook returns at once).
    event: async ({ event }) => {
      if (event.type !== "session.idle") return;
      send({ hook_event_name: "Stop", session_id: (event.properties || {}).sessionID, cwd: directory });
    },
  };
};
`

func installOpenCode(e *Env, install bool) error {
	return installPlugin(e, install, "opencode", []string{".opencode", "plugin"}, opencodeUser, "ckpt.js", openCodePlugin)
}

// installPlugin writes (or, !install, removes) the plugin file name of
// the agent named agent: in the workspace's dir (workspace-relative
// parts), or with --user at user's path. The
// plugin is template with CKPT_COMMAND made the hook command as a JSON
// array of argv (`ckpt hook AGENT [--strict]`), after rename's other
// replacements (old, new pairs).
func installPlugin(e *Env, install bool, agent string, dir []string, user func() (string, error), name, template string, rename ...string) error {
	path := filepath.Join(append(append([]string{e.Workspace}, dir...), name)...)
	if e.User {
		p, err := user()
		if err != nil {
			return err
		}
		path = p
	}
	argv := []string{e.Exe, "hook", agent}
	if e.Strict {
		argv = append(argv, "--strict")
	}
	b, err := marshalNoEscape(argv)
	if err != nil {
		return err
	}
	content := strings.NewReplacer(append(rename, "CKPT_COMMAND", string(b))...).Replace(template)
	return installFiles(e, path, []ownFile{{path: path, content: []byte(content), mode: 0o644}}, install)
}

// opencodeUser is the plugin a --user install writes.
func opencodeUser() (string, error) { return userPath(".config", "opencode", "plugin", "ckpt.js") }

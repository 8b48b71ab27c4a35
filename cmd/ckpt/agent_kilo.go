package main

import (
	"path/filepath"
	"strings"
)

// Kilo Code CLI (`kilo`, a fork of OpenCode): a plugin file,
// .kilo/plugin/ckpt.js (~/.config/kilo/plugin/ckpt.js with --user). Kilo
// loads plugins as OpenCode does, with the same hooks and tools (checked
// with the Kilo CLI 7.7.7: it loads .kilo/plugin/, .kilo/plugins/ and
// .kilocode/plugin/, not .opencode/; its own prompt tells the model to
// keep project configuration in .kilo/), so ckpt writes OpenCode's plugin
// under Kilo's name: chat.message opens a turn, tool.execute.before
// captures write, edit (filePath) and apply_patch (patchText) and marks
// bash, and session.idle starts a background sync when the store has a
// remote.
func init() {
	registerAgent(&agentSpec{
		name:    "kilo",
		title:   "Kilo Code CLI",
		decode:  decodeClaudeStyle("kilo"),
		install: installKilo,
		detect:  []string{".kilo", ".kilocode", "kilo.json", "kilo.jsonc"},
		writes:  ".kilo/plugin/ckpt.js",
		bins:    []string{"kilo", "kilocode"},
		home:    []string{".config/kilo"},
	})
	agentConfigs["kilo"] = agentConfig{[]string{".kilo/plugin/ckpt.js"},
		`{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`}
}

func installKilo(a *app, ws string, o installOptions, install bool) error {
	dir := filepath.Join(ws, ".kilo", "plugin")
	if o.user {
		p, err := userPath(".config", "kilo", "plugin")
		if err != nil {
			return err
		}
		dir = p
	}
	argv := []string{selfPath(), "hook", "kilo"}
	if o.strict {
		argv = append(argv, "--strict")
	}
	b, err := marshalNoEscape(argv)
	if err != nil {
		return err
	}
	plugin := strings.NewReplacer("ckpt uninstall opencode", "ckpt uninstall kilo", "OpenCode's", "Kilo's",
		"opencode plugin", "kilo plugin", "CKPT_COMMAND", string(b)).Replace(openCodePlugin)
	path := filepath.Join(dir, "ckpt.js")
	return installFiles(a, path, []ownFile{{path: path, content: []byte(plugin), mode: 0o644}}, install)
}

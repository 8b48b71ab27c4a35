package agent

// Kilo Code CLI (`kilo`, a fork of OpenCode): a plugin file,
// .kilo/plugin/ckpt.js (~/.config/kilo/plugin/ckpt.js with --user). Kilo
// loads plugins as OpenCode does, with the same hooks and tools (checked
// with the Kilo CLI 7.7.7: it loads .kilo/plugin/, .kilo/plugins/ and
// .kilocode/plugin/, not .opencode/; its own prompt tells the model to
// keep project configuration in .kilo/), so ckpt writes OpenCode's plugin
// under Kilo's name: chat.message opens a turn, tool.execute.before
// captures write, edit (filePath) and apply_patch (patchText) and marks
// bash, and session.idle starts a background sync when the store has a
// remote. Started in a subdirectory, Kilo loads the workspace's .kilo/
// plugins too, git repository or not (checked with 7.7.7): its hooks carry
// the subdirectory, which ckpt records into the workspace's session.
func init() {
	registerSpec(&spec{
		name:    "kilo",
		title:   "Kilo Code CLI",
		decode:  decodeClaudeStyle("kilo"),
		install: installKilo,
		user:    kiloUser,
		markers: Markers{
			Workspace: []string{".kilo", ".kilocode", "kilo.json", "kilo.jsonc"},
			Bins:      []string{"kilo", "kilocode"},
			Home:      []string{".config/kilo"},
			Writes:    ".kilo/plugin/ckpt.js",
			Config:    []string{".kilo/plugin/ckpt.js"},
			Probe:     `{"session_id":"ckpt-check","cwd":"@WORK@","hook_event_name":"UserPromptSubmit","prompt":"ckpt install --check"}`,
		},
	})
}

func installKilo(e *Env, install bool) error {
	return installPlugin(e, install, "kilo", []string{".kilo", "plugin"}, kiloUser, "ckpt.js", openCodePlugin,
		"ckpt uninstall opencode", "ckpt uninstall kilo", "OpenCode's", "Kilo's", "opencode plugin", "kilo plugin")
}

// kiloUser is the plugin a --user install writes.
func kiloUser() (string, error) { return userPath(".config", "kilo", "plugin", "ckpt.js") }

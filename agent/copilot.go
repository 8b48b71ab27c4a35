package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// GitHub Copilot CLI: a hooks file of ckpt's own, .github/hooks/ckpt.json
// ($COPILOT_HOME/hooks/ckpt.json, else ~/.copilot/hooks/ckpt.json, with
// --user). Its camelCase events carry no event name: userPromptSubmitted
// has prompt, preToolUse has toolName and toolArgs (an object, or a JSON
// string holding one); postToolUse adds toolResult; agentStop (the agent
// finished answering) has stopReason and sessionEnd reason. The PascalCase events
// (VS Code's format) are Claude-shaped and handled as such. Nothing is
// printed: an empty answer lets the tool run as it would.
func init() {
	registerSpec(&spec{
		name:    "copilot",
		title:   "GitHub Copilot CLI",
		decode:  decodeCopilot,
		install: installCopilot,
		user:    copilotUser,
		markers: Markers{
			Workspace: []string{".github/hooks", ".github/copilot-instructions.md"},
			Bins:      []string{"copilot"},
			Home:      []string{".copilot"},
			Writes:    ".github/hooks/ckpt.json",
			Config:    []string{".github/hooks/ckpt.json"},
			Probe:     `{"sessionId":"ckpt-check","timestamp":0,"cwd":"@WORK@","prompt":"ckpt install --check"}`,
			Subdir:    "git",
		},
	})
}

type copilotEvent struct {
	SessionID  string          `json:"sessionId"`
	Cwd        string          `json:"cwd"`
	Prompt     *string         `json:"prompt"`
	ToolName   string          `json:"toolName"`
	ToolArgs   json.RawMessage `json:"toolArgs"`
	ToolResult json.RawMessage `json:"toolResult"`
	// stopReason is agentStop's (the agent finished answering), reason
	// sessionEnd's: both end with a background sync.
	StopReason *string `json:"stopReason"`
	Reason     *string `json:"reason"`
	// Set on PascalCase (Claude-shaped) events.
	HookEventName string `json:"hook_event_name"`
}

func decodeCopilot(data []byte) (Plan, *Failure) {
	var ev copilotEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return Plan{}, badJSON(err)
	}
	if ev.HookEventName != "" {
		return decodeClaudeStyle("copilot")(data)
	}
	session := ev.SessionID
	if session == "" && ev.Cwd != "" {
		// Versions whose events name no session: one session per
		// workspace.
		session = derivedSession("copilot", ev.Cwd)
	}
	n := normEvent{session: session, cwd: ev.Cwd, tool: ev.ToolName}
	switch {
	case ev.ToolName != "" && len(ev.ToolResult) > 0:
		return Plan{None: true}, nil // postToolUse
	case ev.ToolName != "":
		n.kind = "tool"
		n.paths, n.shell = toolWrites(ev.ToolName, objectArgs(ev.ToolArgs))
	case ev.Prompt != nil:
		n.kind, n.prompt = "prompt", *ev.Prompt
	case ev.StopReason != nil || ev.Reason != nil:
		return syncPlan() // agentStop, sessionEnd
	default:
		return Plan{None: true}, nil // sessionStart, errorOccurred, …
	}
	return n.plan("copilot")
}

func installCopilot(e *Env, install bool) error {
	ws := e.Workspace
	dir := filepath.Join(ws, ".github", "hooks")
	if e.User {
		p, err := copilotUser()
		if err != nil {
			return err
		}
		dir = filepath.Dir(p)
	}
	cmd := e.agentCommand("copilot")
	entry := map[string]any{"type": "command", "bash": cmd, "powershell": cmd}
	doc := map[string]any{
		"version": 1,
		"hooks": map[string]any{
			"userPromptSubmitted": []any{entry},
			"preToolUse":          []any{entry},
			"agentStop":           []any{entry},
			"sessionEnd":          []any{entry},
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	path := filepath.Join(dir, "ckpt.json")
	err = installFiles(e, path, []ownFile{{path: path, content: b, mode: 0o644, own: ownCopilotFile}}, install)
	if err == nil && install && !e.User {
		e.say("ckpt: note: Copilot CLI loads .github/hooks only in a folder it trusts (--trust-folder); --user installs for every folder")
	}
	return err
}

// ownCopilotFile recognises the hooks file ckpt writes: JSON whose every
// hook runs ckpt's copilot hook.
func ownCopilotFile(b []byte) bool {
	var doc struct {
		Hooks map[string][]struct {
			Bash string `json:"bash"`
		} `json:"hooks"`
	}
	if json.Unmarshal(b, &doc) != nil || len(doc.Hooks) == 0 {
		return false
	}
	own := ownAgentCommand("copilot")
	for _, list := range doc.Hooks {
		for _, h := range list {
			if !own(h.Bash) {
				return false
			}
		}
	}
	return true
}

// copilotUser is the file a --user install writes: hooks/ckpt.json in
// $COPILOT_HOME, else in ~/.copilot.
func copilotUser() (string, error) {
	if h := os.Getenv("COPILOT_HOME"); h != "" {
		return filepath.Join(h, "hooks", "ckpt.json"), nil
	}
	return userPath(".copilot", "hooks", "ckpt.json")
}

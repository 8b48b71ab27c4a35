package main

import (
	_ "embed"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// pi (npm @earendil-works/pi-coding-agent): an extension file,
// .pi/extensions/ckpt-rewind.ts ($PI_CODING_AGENT_DIR/extensions, else
// ~/.pi/agent/extensions, with --user), which pi discovers and loads with
// jiti. It hands pi's events to `ckpt hook pi` as Claude-shaped JSON:
// before_agent_start (once per user prompt) as UserPromptSubmit,
// tool_call as PreToolUse with pi's tool names and arguments (write and
// edit with path, bash with command; one step per call, keyed by pi's
// toolCallId), session_start as SessionStart (its reason as source: a
// resume checkpoint in scan mode) and agent_settled as Stop (a background
// sync when the store has a remote). Every rule is the hook's; the
// extension also gives pi /rewind, its /fork and /tree restore options,
// undo and redo, all through the ckpt command line.
func init() {
	registerAgent(&agentSpec{
		name:    "pi",
		title:   "pi",
		decode:  decodePi,
		install: installPi,
		detect:  []string{".pi"},
		writes:  ".pi/extensions/ckpt-rewind.ts",
	})
}

// piExtension is the extension ckpt installs; CKPT_ARGV becomes this
// binary's argv as a JSON array.
//
//go:embed pi/ckpt-rewind.ts
var piExtension string

// piEvent is what the extension sends: Claude's shape, plus the fields
// the pi dialect adds.
type piEvent struct {
	claudeStyleEvent
	ToolUseID string `json:"tool_use_id"`
	Source    string `json:"source"`
}

func decodePi(data []byte) (hookPlan, *hookFailure) {
	var ev piEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return hookPlan{}, badJSON(err)
	}
	n := normEvent{session: ev.SessionID, cwd: ev.Cwd, tool: ev.ToolName}
	switch ev.HookEventName {
	case "UserPromptSubmit":
		if ev.Prompt == nil {
			return hookPlan{}, &hookFailure{msg: "UserPromptSubmit event has no prompt; nothing recorded"}
		}
		n.kind, n.prompt = "prompt", *ev.Prompt
	case "PreToolUse":
		n.kind = "tool"
		n.paths, n.shell = toolWrites(ev.ToolName, objectArgs(ev.ToolInput))
		for i, p := range n.paths {
			n.paths[i] = piPath(p)
		}
	case "SessionStart":
		switch ev.Source {
		case "startup", "resume", "fork", "reload", "new":
		default:
			return hookPlan{}, &hookFailure{msg: "SessionStart event has no known source; nothing recorded"}
		}
		// Checked as a prompt is, then made a session start.
		n.kind, n.prompt = "prompt", ""
		plan, f := n.plan("pi")
		if f != nil {
			return plan, f
		}
		plan.ev.Prompt, plan.ev.HookEventName, plan.ev.Source = nil, "SessionStart", ev.Source
		plan.start = true
		return plan, nil
	case "Stop", "SessionEnd":
		return syncPlan()
	default:
		return hookPlan{}, unknownEvent(ev.HookEventName)
	}
	plan, f := n.plan("pi")
	plan.ev.ToolUseID = ev.ToolUseID
	return plan, f
}

// piPath is a path argument of pi's file tools as the tools resolve it: a
// leading @ (a file reference the model copied) is dropped, and ~ is the
// home directory (outside the workspace: the hook then skips it).
func piPath(p string) string {
	p = strings.TrimPrefix(p, "@")
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// piAgentDir is pi's user configuration directory: $PI_CODING_AGENT_DIR,
// else ~/.pi/agent.
func piAgentDir() (string, error) {
	if d := os.Getenv("PI_CODING_AGENT_DIR"); d != "" {
		return d, nil
	}
	return userPath(".pi", "agent")
}

func installPi(a *app, ws string, o installOptions, install bool) error {
	dir := filepath.Join(ws, ".pi", "extensions")
	if o.user {
		d, err := piAgentDir()
		if err != nil {
			return err
		}
		dir = filepath.Join(d, "extensions")
	}
	argv := []string{selfPath()}
	b, err := marshalNoEscape(argv)
	if err != nil {
		return err
	}
	content := strings.Replace(piExtension, "CKPT_ARGV", strings.TrimSpace(string(b)), 1)
	if o.strict {
		content = strings.Replace(content, "const STRICT = false;", "const STRICT = true;", 1)
	}
	path := filepath.Join(dir, "ckpt-rewind.ts")
	err = installFiles(a, path, []ownFile{{path: path, content: []byte(content), mode: 0o644}}, install)
	if err == nil && install && !o.user {
		// Checked with pi 1.6.0: a project's .pi/extensions load only in
		// a project the user trusted; print, json and rpc modes cannot ask.
		a.say("ckpt: note: pi loads .pi/extensions only in a trusted project: accept pi's trust prompt (or run /trust in pi); for one run, pi --approve; or install for every project with `ckpt install pi --user`")
	}
	return err
}
